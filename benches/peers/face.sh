#!/usr/bin/env bash
# The face detector against its peers in one step: the venv (scripts/face-venv.sh,
# idempotent), the photograph and the networks' inputs (face.py inputs), ONNX Runtime and
# OpenCV DNN (face.py peers), tvm-rs (cargo bench -p tvm-mtcnn --bench face), then the table, also
# written to target/peers/face/table.md. PEERS_THREADS (default 2) threads for the peers
# and for tvm-rs's pool (RAYON_NUM_THREADS).
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
"$py" "$here/face.py" peers "$dir"
(cd "$root" && cargo bench -p tvm-mtcnn --bench face -- "$dir" "$@")
"$py" "$here/face.py" table "$dir" | tee "$dir/table.md"
