#!/usr/bin/env bash
# Creates the Python environment of the peer comparison (benches/peers/run.py) at
# target/peers-venv: numpy (OpenBLAS), apache-tvm 0.27 (TensorIR, tvm.s_tir), halide 21
# (JIT), onnx and onnxruntime. Idempotent: does nothing when the venv already imports
# them at the expected versions. Works from any cwd.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/target/peers-venv"
py="$venv/bin/python"

# Version pins: the 0.27 series of TVM (its s_tir schedule API), Halide 21.
reqs=(
    "numpy"
    "apache-tvm>=0.27,<0.28"
    "halide>=21,<22"
    "onnx"
    "onnxruntime"
)

check() {
    "$py" - <<'EOF' 2>/dev/null
import numpy, onnx, onnxruntime, halide, tvm
import tvm.s_tir  # noqa: F401  (the 0.27 schedule API)
assert tvm.__version__.startswith("0.27"), tvm.__version__
EOF
}

if [[ -x "$py" ]] && check; then
    echo "peers venv ready: $venv"
    exit 0
fi

if [[ ! -x "$py" ]]; then
    echo "creating $venv"
    mkdir -p "$root/target"
    python3 -m venv "$venv"
fi
"$py" -m pip install --quiet --upgrade pip
"$py" -m pip install --quiet "${reqs[@]}"

if ! check; then
    echo "setup.sh: the venv at $venv does not import numpy/tvm(0.27, s_tir)/halide/onnx/onnxruntime" >&2
    "$py" -c "import numpy, onnx, onnxruntime, halide, tvm, tvm.s_tir; print(tvm.__version__)" >&2 || true
    exit 1
fi
"$py" - <<'EOF'
import numpy, onnx, onnxruntime, halide, tvm
print("peers venv ready:", "numpy", numpy.__version__, "| tvm", tvm.__version__,
      "| halide", getattr(halide, "__version__", "?"), "| onnx", onnx.__version__,
      "| onnxruntime", onnxruntime.__version__)
EOF
