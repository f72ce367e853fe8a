#!/usr/bin/env bash
# The face detector against its peers in one step: the venv (scripts/face-venv.sh,
# idempotent), the photograph and the networks' inputs (face.py inputs), ONNX Runtime and
# OpenCV DNN (face.py peers), tvm-rs (cargo bench -p tvm-mtcnn --bench face), in rounds,
# then the table, also written to target/peers/face/table.md. PEERS_THREADS (default 2)
# threads for the peers and for tvm-rs's pool (RAYON_NUM_THREADS).
#
#   bash benches/peers/face.sh [--device cpu|opencl]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="$root/target/peers/face"
py="$root/target/face-venv/bin/python"
bash "$root/scripts/face-venv.sh"
export PEERS_THREADS="${PEERS_THREADS:-2}"
export RAYON_NUM_THREADS="$PEERS_THREADS"
"$py" "$here/face.py" inputs "$dir"
(cd "$root" && cargo bench -p tvm-mtcnn --bench face --no-run)
# Rounds (FACE_ROUNDS, default 3), tvm-rs first in odd rounds and the peers first in even
# ones, so that a change in the host's speed during the run falls on both sides: the table
# gives the medians of the rounds and the median of the per-round ratios.
rounds="${FACE_ROUNDS:-3}"
rm -f "$dir"/peers.r*.json "$dir"/tvm.r*.json
peers() { "$py" "$here/face.py" peers "$dir" && mv "$dir/peers.json" "$dir/peers.r$1.json"; }
mine() {
  local r="$1"
  shift
  (cd "$root" && cargo bench -p tvm-mtcnn --bench face -- "$dir" "$@") && mv "$dir/tvm.json" "$dir/tvm.r$r.json"
}
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then mine "$r" "$@"; peers "$r"; else peers "$r"; mine "$r" "$@"; fi
done
"$py" "$here/face.py" table "$dir" | tee "$dir/table.md"
