#!/usr/bin/env bash
# The peer comparison in one step: the venv (setup.sh, idempotent), then run.py with the
# given arguments (--no-cargo, --only id,id, --peers tvm,halide, --quick; see run.py -h).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup.sh"
exec python3 "$here/run.py" "$@"
