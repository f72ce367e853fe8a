#!/usr/bin/env python3
"""The peers of the tvm-rs peer comparison: TVM (0.27, TensorIR + tvm.s_tir.Schedule),
Halide (21, JIT), numpy (OpenBLAS) and ONNX Runtime, each running the kernels of
`benches/peers/kernels.rs` and `examples/kernels/*.rs` with the same schedules where the
peer has schedules. Every peer's output is checked against a numpy (float64) reference
before it is timed; a mismatch is an error.

Run it with the venv of `setup.sh` (target/peers-venv/bin/python). `run.py` drives it and
joins its results with criterion's; on its own:

    target/peers-venv/bin/python benches/peers/peers.py [--only id,id] [--json out.json]

runs every peer library in its own process (`--peer NAME` runs one, in this process), so
that the thread pools of TVM, Halide, OpenBLAS and ORT never meet.

Timing follows criterion's defaults: 3 s warm-up, then samples whose iteration count
makes each sample last >= 100 ms, the median of the per-iteration times.
Environment:
    PEERS_THREADS   threads for every peer (default: the CPUs this process may use)
    PEERS_QUICK=1   smoke run: 0.2 s warm-up, 3 samples
    PEERS_WARMUP_S, PEERS_SAMPLES, PEERS_SAMPLE_S   override warm-up seconds, sample
                    count, and the target seconds per sample
    PEERS_TVM_MCPU  the LLVM -mcpu of the TVM target (default: the host's, from LLVM)
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# ----------------------------------------------------------------------------- kernels

N = 1024  # sgemm / matmul size


def written_knob(example, knob):
    """The first (written) value of `tune!(knob: ...)` in examples/kernels/<example>.rs: the
    peers get the schedule tvm-rs runs here (the bench runs schedules as written)."""
    with open(os.path.join(ROOT, "examples", "kernels", example + ".rs")) as f:
        m = re.search(r"tune!\(\s*" + knob + r"\s*:\s*(\d+)", f.read())
    if m is None:
        raise SystemExit(f"peers: no `tune!({knob}: ...)` in examples/kernels/{example}.rs")
    return int(m.group(1))


MATMUL_BLOCK = written_knob("matmul", "block")  # matmul.rs: the rows of a parallel block, in 8-row register tiles
CONV = dict(C=64, F=64, H=56, W=56, R=3, S=3)
ROWS, COLS = 4096, 1024  # softmax / layernorm
VEC = 1 << 24  # vector add / copy
LN_EPS = 1e-5

GEMM_FLOP = 2 * N ** 3
CONV_FLOP = 2 * CONV["F"] * CONV["C"] * CONV["R"] * CONV["S"] * CONV["H"] * CONV["W"]
ROW_BYTES = 2 * ROWS * COLS * 4

# id -> (description, unit, amount): unit "flop" (GFLOP/s) or "byte" (GB/s).
KERNELS = {
    "sgemm_bn32": ("C=A·B 1024³, 32-col packed B, write cache", "flop", GEMM_FLOP),
    "sgemm_bn16": ("C=A·B 1024³, 16-col packed B, write cache", "flop", GEMM_FLOP),
    "sgemm_bn64": ("C=A·B 1024³, 64-col packed B, write cache", "flop", GEMM_FLOP),
    "sgemm_bn32_nocache": ("C=A·B 1024³, 32-col packed B, no cache", "flop", GEMM_FLOP),
    "matmul": (f"C=A·B 1024³, 32-col packed B, {MATMUL_BLOCK}-row blocks of 8x32 register tiles", "flop", GEMM_FLOP),
    "conv2d_padded": ("3x3 conv 64->64 56x56, pad stage", "flop", CONV_FLOP),
    "conv2d": ("3x3 conv 64->64 56x56, pad stage, extended rows, 8x48 register tile", "flop", CONV_FLOP),
    "conv2d_if": ("3x3 conv 64->64 56x56, pad by if", "flop", CONV_FLOP),
    "softmax": ("row softmax 4096x1024", "byte", ROW_BYTES),
    "layernorm": ("row layernorm 4096x1024", "byte", ROW_BYTES),
    "vector_add": ("c=a+b, 2^24 f32", "byte", 3 * VEC * 4),
}

# The "no schedule" table: kernels written without `schedule!` (benches/peers/noschedule.rs),
# against what a user would call instead. id -> (description, unit, amount, peers).
SQ = 4096  # row / column sums and the transpose: SQ x SQ
ROLL = 37  # the columns auto_roll rotates by (as ROLL in benches/peers.rs)
BMM = (16, 256)
DW = dict(C=128, H=56, W=56)
AUTO = {
    "auto_matmul": ("no schedule: C=A·B 1024³", "flop", 2 * 1024 ** 3, ["numpy"]),
    "auto_matmul_1000": ("no schedule: C=A·B 1000³", "flop", 2 * 1000 ** 3, ["numpy"]),
    "auto_matmul_127": ("no schedule: C=A·B 127³", "flop", 2 * 127 ** 3, ["numpy"]),
    "auto_bmm": ("no schedule: 16 x (256³ matmul)", "flop", 2 * BMM[0] * BMM[1] ** 3, ["numpy"]),
    "auto_conv2d": ("no schedule: 3x3 conv 64->64 56x56, pad stage", "flop", CONV_FLOP, ["ort"]),
    "auto_dwconv": ("no schedule: depthwise 3x3 conv 128 ch 56x56", "flop",
                    2 * 9 * DW["C"] * DW["H"] * DW["W"], ["ort"]),
    "auto_softmax": ("no schedule: row softmax 4096x1024", "byte", ROW_BYTES, ["ort", "numpy"]),
    "auto_layernorm": ("no schedule: row layernorm 4096x1024", "byte", ROW_BYTES, ["ort", "numpy"]),
    "auto_rowsum": ("no schedule: row sums 4096x4096", "byte", SQ * SQ * 4, ["ort", "numpy"]),
    "auto_colsum": ("no schedule: column sums 4096x4096", "byte", SQ * SQ * 4, ["ort", "numpy"]),
    "auto_transpose": ("no schedule: transpose 4096x4096", "byte", 2 * SQ * SQ * 4, ["ort", "numpy"]),
    "auto_chain": ("no schedule: relu(x*0.5+b)*g 4096x1024", "byte", ROW_BYTES, ["ort", "numpy"]),
    "auto_roll": ("no schedule: roll of each row by 37, with % (4096x1024)", "byte", ROW_BYTES, ["numpy"]),
}
for _k, (_d, _u, _a, _p) in AUTO.items():
    KERNELS[_k] = (_d, _u, _a)
# Rows with no tvm-rs counterpart (reference numbers of the machine).
EXTRA_ROWS = {
    "copy": ("np.copyto 2^24 f32 (machine copy bandwidth)", "byte", 2 * VEC * 4),
}

# Which peer library runs which kernel ("numpy" also runs the extra "copy" row).
PEERS = {
    "tvm": ["sgemm_bn32", "sgemm_bn16", "sgemm_bn64", "sgemm_bn32_nocache", "matmul",
            "conv2d_padded", "conv2d", "conv2d_if", "softmax", "layernorm"],
    "halide": ["sgemm_bn32", "sgemm_bn16", "sgemm_bn64", "sgemm_bn32_nocache", "matmul",
               "conv2d_padded", "conv2d", "softmax", "layernorm"],
    "numpy": ["sgemm_bn32", "sgemm_bn16", "sgemm_bn64", "sgemm_bn32_nocache", "matmul",
              "vector_add", "copy"],
    "ort": ["conv2d_padded", "conv2d", "conv2d_if", "softmax", "layernorm"],
}
for _k, (_d, _u, _a, _ps) in AUTO.items():
    for _p in _ps:
        PEERS[_p].append(_k)
PEER_LABELS = {"tvm": "TVM", "halide": "Halide", "numpy": "numpy", "ort": "ORT"}

# ------------------------------------------------------------------------------ common


def threads():
    t = os.environ.get("PEERS_THREADS")
    if t:
        return int(t)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def peer_env(peer):
    """The environment of a peer's process: the same thread count for every library."""
    env = dict(os.environ)
    t = str(threads())
    env["PEERS_THREADS"] = t
    for v in ("TVM_NUM_THREADS", "HL_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "RAYON_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = t
    if peer == "numpy":
        # These slow a current numpy's OpenBLAS down (they are meant for other builds).
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    return env


def timing_config():
    quick = os.environ.get("PEERS_QUICK", "") not in ("", "0")
    warm = float(os.environ.get("PEERS_WARMUP_S", 0.2 if quick else 3.0))
    samples = int(os.environ.get("PEERS_SAMPLES", 3 if quick else 10))
    sample_s = float(os.environ.get("PEERS_SAMPLE_S", 0.1))
    return warm, max(1, samples), sample_s


def bench(fn):
    """Criterion-style: warm up for `warm` s (estimating the time of one call), then
    `samples` samples of `iters` calls each, iters chosen so a sample takes >= sample_s;
    returns the median per-call time in seconds, the iters and the samples."""
    warm, samples, sample_s = timing_config()
    clock = time.perf_counter
    n, t0 = 0, clock()
    while True:
        fn()
        n += 1
        el = clock() - t0
        if el >= warm:
            break
    est = el / n
    iters = max(1, math.ceil(sample_s / est)) if est < sample_s else 1
    per = []
    for _ in range(samples):
        t = clock()
        for _ in range(iters):
            fn()
        per.append((clock() - t) / iters)
    return statistics.median(per), iters, samples


def pattern(shape, salt):
    """A deterministic input in [-1, 1): the same values for every peer."""
    import numpy as np
    size = int(np.prod(shape))
    i = np.arange(size, dtype=np.int64)
    v = ((i * 7919 + salt * 104729) % 1009).astype(np.float64) / 504.5 - 1.0
    return aligned(v.reshape(shape).astype(np.float32))


def aligned(arr, align=64):
    """A copy of arr in 64-byte-aligned memory (so that no peer starts misaligned)."""
    import numpy as np
    buf = np.empty(arr.nbytes + align, dtype=np.uint8)
    off = (-buf.ctypes.data) % align
    out = buf[off:off + arr.nbytes].view(arr.dtype).reshape(arr.shape)
    out[...] = arr
    return out


def aligned_empty(shape):
    import numpy as np
    return aligned(np.zeros(shape, dtype=np.float32))


class Mismatch(Exception):
    pass


def check(name, got, ref, rtol, atol_rel):
    """|got - ref| <= rtol*|ref| + atol_rel*max|ref| elementwise, or raise."""
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        raise Mismatch(f"{name}: shape {got.shape} != reference {ref.shape}")
    scale = float(np.max(np.abs(ref)))
    err = np.abs(got - ref)
    bad = ~(err <= rtol * np.abs(ref) + atol_rel * scale)  # NaN counts as bad
    if bad.any():
        idx = np.unravel_index(int(np.argmax(np.where(np.isnan(err), np.inf, err))), err.shape)
        raise Mismatch(f"{name}: {int(bad.sum())} of {err.size} elements wrong; worst at {idx}: "
                       f"got {got[idx]!r}, want {ref[idx]!r} (rtol {rtol}, atol {atol_rel}*{scale:.3g})")
    return float(np.nanmax(err) / scale) if scale else 0.0


# ---------------------------------------------------------------- inputs and references

TOL = {  # id -> (rtol, atol relative to max|ref|)
    "gemm": (0.0, 1e-4),
    "conv": (0.0, 1e-4),
    "softmax": (1e-4, 1e-6),
    "layernorm": (1e-4, 1e-5),
    "elementwise": (0.0, 0.0),
    "auto_matmul": (0.0, 1e-4), "auto_matmul_1000": (0.0, 1e-4), "auto_matmul_127": (0.0, 1e-4),
    "auto_bmm": (0.0, 1e-4), "auto_conv2d": (0.0, 1e-4), "auto_dwconv": (0.0, 1e-5),
    "auto_softmax": (1e-4, 1e-6), "auto_layernorm": (1e-4, 1e-5), "auto_rowsum": (0.0, 1e-5),
    "auto_colsum": (0.0, 1e-5), "auto_transpose": (0.0, 0.0), "auto_chain": (1e-6, 1e-7),
    "auto_roll": (0.0, 0.0),
}


def kind(kid):
    if kid.startswith("auto_"):
        return kid
    if kid.startswith("sgemm") or kid == "matmul":
        return "gemm"
    if kid.startswith("conv2d"):
        return "conv"
    if kid in ("vector_add", "copy"):
        return "elementwise"
    return kid


_CACHE = {}


def inputs(k):
    """The inputs of a kernel kind (numpy f32, C-contiguous, aligned) and its float64
    reference output."""
    import numpy as np
    if k in _CACHE:
        return _CACHE[k]
    if k == "gemm":
        a, b = pattern((N, N), 1), pattern((N, N), 2)
        ins, ref = (a, b), a.astype(np.float64) @ b.astype(np.float64)
    elif k == "conv":
        C, F, H, W = CONV["C"], CONV["F"], CONV["H"], CONV["W"]
        d, w = pattern((1, C, H, W), 3), pattern((F, C, 3, 3), 4)
        p = np.zeros((C, H + 2, W + 2))
        p[:, 1:H + 1, 1:W + 1] = d[0]
        out = np.zeros((F, H, W))
        wd = w.astype(np.float64)
        for r in range(3):
            for s in range(3):
                out += np.tensordot(wd[:, :, r, s], p[:, r:r + H, s:s + W], axes=(1, 0))
        ins, ref = (d, w), out[None]
    elif k == "softmax":
        x = pattern((ROWS, COLS), 5) * np.float32(4.0)
        xd = x.astype(np.float64)
        e = np.exp(xd - xd.max(axis=1, keepdims=True))
        ins, ref = (aligned(x),), e / e.sum(axis=1, keepdims=True)
    elif k == "layernorm":
        x, g, bt = pattern((ROWS, COLS), 6) * np.float32(3.0), pattern((COLS,), 7), pattern((COLS,), 8)
        xd = x.astype(np.float64)
        mu = xd.mean(axis=1, keepdims=True)
        var = ((xd - mu) ** 2).mean(axis=1, keepdims=True)
        ref = (xd - mu) / np.sqrt(var + LN_EPS) * g + bt
        ins = (aligned(x), g, bt)
    elif k == "elementwise":
        a, b = pattern((VEC,), 9), pattern((VEC,), 10)
        ins, ref = (a, b), (a + b).astype(np.float64)
    elif k.startswith("auto_"):
        ins, ref = auto_inputs(k)
    else:
        raise KeyError(k)
    _CACHE[k] = (ins, ref)
    return ins, ref


def auto_inputs(k):
    """The inputs and float64 reference of an `auto_*` kernel."""
    import numpy as np
    f64 = lambda a: a.astype(np.float64)  # noqa: E731
    if k.startswith("auto_matmul"):
        n = {"auto_matmul": 1024, "auto_matmul_1000": 1000, "auto_matmul_127": 127}[k]
        a, b = pattern((n, n), 11), pattern((n, n), 12)
        return (a, b), f64(a) @ f64(b)
    if k == "auto_bmm":
        q, n = BMM
        a, b = pattern((q, n, n), 13), pattern((q, n, n), 14)
        return (a, b), np.matmul(f64(a), f64(b))
    if k == "auto_conv2d":
        return inputs("conv")
    if k == "auto_dwconv":
        C, H, W = DW["C"], DW["H"], DW["W"]
        d, w = pattern((1, C, H, W), 15), pattern((C, 3, 3), 16)
        p = np.zeros((C, H + 2, W + 2))
        p[:, 1:H + 1, 1:W + 1] = d[0]
        out = np.zeros((C, H, W))
        for r in range(3):
            for s_ in range(3):
                out += f64(w)[:, r, s_][:, None, None] * p[:, r:r + H, s_:s_ + W]
        return (d, w), out[None]
    if k == "auto_softmax":
        return inputs("softmax")
    if k == "auto_layernorm":
        return inputs("layernorm")
    if k in ("auto_rowsum", "auto_colsum", "auto_transpose"):
        x = pattern((SQ, SQ), 17)
        ref = {"auto_rowsum": lambda: f64(x).sum(axis=1), "auto_colsum": lambda: f64(x).sum(axis=0),
               "auto_transpose": lambda: f64(x).T}[k]()
        return (x,), ref
    if k == "auto_roll":
        x = pattern((ROWS, COLS), 21)
        return (x,), np.roll(f64(x), ROLL, axis=1)
    if k == "auto_chain":
        x, b, g = pattern((ROWS, COLS), 18), pattern((COLS,), 19), pattern((COLS,), 20)
        return (x, b, g), np.maximum(f64(x) * 0.5 + f64(b), 0.0) * f64(g)
    raise KeyError(k)


def auto_numpy(kid):
    """What a numpy user writes for an `auto_*` kernel (into preallocated outputs)."""
    import numpy as np
    ins, ref = inputs(kid)
    out = aligned_empty(ref.shape)
    if kid.startswith("auto_matmul") or kid == "auto_bmm":
        a, b = ins
        return (lambda: np.matmul(a, b, out=out)), (lambda: out), ref, "np.matmul (OpenBLAS)"
    if kid == "auto_softmax":
        (x,) = ins
        t = aligned_empty(x.shape)
        mx = aligned_empty((x.shape[0], 1))
        sm = aligned_empty((x.shape[0], 1))

        def f():
            np.max(x, axis=1, keepdims=True, out=mx)
            np.subtract(x, mx, out=t)
            np.exp(t, out=t)
            np.sum(t, axis=1, keepdims=True, out=sm)
            np.divide(t, sm, out=out)
        return f, (lambda: out), ref, "numpy max/exp/sum/divide"
    if kid == "auto_layernorm":
        x, g, bt = ins
        mu = aligned_empty((x.shape[0], 1))
        var = aligned_empty((x.shape[0], 1))
        t = aligned_empty(x.shape)

        def f():
            np.mean(x, axis=1, keepdims=True, out=mu)
            np.subtract(x, mu, out=t)
            np.multiply(t, t, out=out)
            np.mean(out, axis=1, keepdims=True, out=var)
            var[...] += LN_EPS
            np.sqrt(var, out=var)
            np.divide(t, var, out=t)
            np.multiply(t, g, out=t)
            np.add(t, bt, out=out)
        return f, (lambda: out), ref, "numpy mean/subtract/sqrt/divide"
    if kid == "auto_rowsum":
        (x,) = ins
        return (lambda: np.sum(x, axis=1, out=out)), (lambda: out), ref, "np.sum(axis=1)"
    if kid == "auto_colsum":
        (x,) = ins
        return (lambda: np.sum(x, axis=0, out=out)), (lambda: out), ref, "np.sum(axis=0)"
    if kid == "auto_transpose":
        (x,) = ins
        return (lambda: np.copyto(out, x.T)), (lambda: out), ref, "np.copyto(out, x.T)"
    if kid == "auto_roll":
        (x,) = ins

        def f():
            out[:, ROLL:] = x[:, :-ROLL]
            out[:, :ROLL] = x[:, -ROLL:]
        return f, (lambda: out), ref, "two slice copies (np.roll's result, no temporary)"
    if kid == "auto_chain":
        x, b, g = ins

        def f():
            np.multiply(x, np.float32(0.5), out=out)
            np.add(out, b, out=out)
            np.maximum(out, np.float32(0.0), out=out)
            np.multiply(out, g, out=out)
        return f, (lambda: out), ref, "numpy multiply/add/maximum/multiply"
    raise KeyError(kid)


def auto_ort_model(kid):
    """The ONNX graph of an `auto_*` kernel: the data input `x`, parameters as
    initializers (as in a deployed model)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    f32 = TensorProto.FLOAT
    ins, ref = inputs(kid)
    inits, nodes = [], []
    if kid == "auto_conv2d":
        return ort_model("conv2d_padded")
    if kid in ("auto_softmax", "auto_layernorm"):
        return ort_model(kid[len("auto_"):])
    if kid == "auto_dwconv":
        d, w = ins
        inits = [numpy_helper.from_array(np.ascontiguousarray(w.reshape(DW["C"], 1, 3, 3)), "w")]
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                  group=DW["C"])]
        xin = list(d.shape)
    elif kid in ("auto_rowsum", "auto_colsum"):
        axis = 1 if kid == "auto_rowsum" else 0
        inits = [numpy_helper.from_array(np.array([axis], dtype=np.int64), "axes")]
        nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)]
        xin = [SQ, SQ]
    elif kid == "auto_transpose":
        nodes = [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])]
        xin = [SQ, SQ]
    elif kid == "auto_chain":
        x, b, g = ins
        inits = [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
                 numpy_helper.from_array(np.ascontiguousarray(b), "b"),
                 numpy_helper.from_array(np.ascontiguousarray(g), "g")]
        nodes = [helper.make_node("Mul", ["x", "half"], ["t0"]), helper.make_node("Add", ["t0", "b"], ["t1"]),
                 helper.make_node("Relu", ["t1"], ["t2"]), helper.make_node("Mul", ["t2", "g"], ["y"])]
        xin = [ROWS, COLS]
    else:
        raise KeyError(kid)
    graph = helper.make_graph(nodes, kid, [helper.make_tensor_value_info("x", f32, xin)],
                              [helper.make_tensor_value_info("y", f32, list(ref.shape))], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 10)
    return model.SerializeToString()


# ---------------------------------------------------------------------------------- numpy


def numpy_impl(kid):
    import numpy as np
    if kid.startswith("auto_"):
        return auto_numpy(kid)
    k = kind(kid)
    (a, b), ref = inputs(k)
    if k == "gemm":
        c = aligned_empty((N, N))
        return (lambda: np.matmul(a, b, out=c)), (lambda: c), ref, "np.matmul (OpenBLAS)"
    if kid == "vector_add":
        c = aligned_empty((VEC,))
        return (lambda: np.add(a, b, out=c)), (lambda: c), ref, "np.add(out=)"
    if kid == "copy":
        c = aligned_empty((VEC,))
        return (lambda: np.copyto(c, a)), (lambda: c), a.astype(np.float64), "np.copyto"
    raise KeyError(kid)


# ------------------------------------------------------------------------------------ TVM


def tvm_target():
    import tvm
    from tvm.target import codegen
    cpu = os.environ.get("PEERS_TVM_MCPU")
    if not cpu:
        try:
            cpu = str(codegen.llvm_get_system_cpu())
        except Exception:  # noqa: BLE001
            cpu = ""
    if cpu:
        try:
            return tvm.target.Target({"kind": "llvm", "mcpu": cpu}), cpu
        except Exception as e:  # noqa: BLE001
            print(f"peers: TVM target llvm -mcpu={cpu} rejected ({e}); using plain llvm",
                  file=sys.stderr)
    return tvm.target.Target({"kind": "llvm"}), "generic"


def tvm_gemm(bn, cache, reg_tile=None):
    """The opt_gemm schedules of kernels.rs (and matmul.rs's with reg_tile=(8, 32))."""
    from tvm import te, s_tir
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    bp = te.compute((N // bn, N, bn), lambda x, k, y: B[k, x * bn + y], name="bp")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * bp[j // bn, k, j % bn], axis=k), name="C")
    sch = s_tir.Schedule(te.create_prim_func([A, B, C]))
    pb = sch.get_sblock("bp")
    px, _pk, py = sch.get_loops(pb)
    sch.parallel(px)
    sch.vectorize(py)
    cb = sch.get_sblock("C")
    if reg_tile is not None:
        # matmul.rs: c tiled 128 x 32, the 128 rows split by 8, parallel io, vectorize
        # ji; the local cache at iio, k split by 4, reorder(ko, ki, ci, cj), unroll ki
        # and ci, vectorize cj.
        ti, tj = reg_tile
        wb = sch.cache_write(cb, 0, "local")  # wb copies C_local out; cb computes into it
        i, j = sch.get_loops(wb)
        io, ii = sch.split(i, [None, MATMUL_BLOCK])
        jo, ji = sch.split(j, [None, tj])
        sch.reorder(io, jo, ii, ji)
        iio, _iii = sch.split(ii, [None, ti])
        sch.parallel(io)
        sch.vectorize(ji)
        sch.compute_at(cb, iio)
        ci, cj, ck = sch.get_loops(cb)[-3:]
        ko, ki = sch.split(ck, [None, 4])
        sch.reorder(ko, ki, ci, cj)
        sch.unroll(ki)
        sch.unroll(ci)
        sch.vectorize(cj)
        sch.decompose_reduction(cb, ko)  # the init before ko, as TE places it
    elif cache:
        # kernels.rs sgemm_bnXX: c tiled bn x bn, parallel mo, the local cache at no,
        # k split by 4, reorder(ko, mc, ki, nc), vectorize nc, unroll ki.
        wb = sch.cache_write(cb, 0, "local")
        i, j = sch.get_loops(wb)
        mo, mi = sch.split(i, [None, bn])
        no, ni = sch.split(j, [None, bn])
        sch.reorder(mo, no, mi, ni)
        sch.parallel(mo)
        sch.compute_at(cb, no)
        mc, nc, ck = sch.get_loops(cb)[-3:]
        ko, ki = sch.split(ck, [None, 4])
        sch.reorder(ko, mc, ki, nc)
        sch.vectorize(nc)  # (vectorize/unroll before decompose_reduction: TIR refuses after)
        sch.unroll(ki)
        sch.decompose_reduction(cb, ko)
    else:
        # sgemm_bn32_nocache: tile bn x bn, k split by 4, reorder(mo, no, ko, mi, ki, ni),
        # parallel mo, vectorize ni, unroll ki; c accumulated in place.
        i, j, ck = sch.get_loops(cb)
        mo, mi = sch.split(i, [None, bn])
        no, ni = sch.split(j, [None, bn])
        ko, ki = sch.split(ck, [None, 4])
        sch.reorder(mo, no, ko, mi, ki, ni)
        sch.parallel(mo)
        sch.vectorize(ni)
        sch.unroll(ki)
        sch.decompose_reduction(cb, ko)
    return sch


def tvm_conv(variant):
    """variant "padded": kernels.rs conv2d_padded; "if": kernels.rs conv2d_if (the padding
    an `if` inside the reduction); "tiled": examples/kernels/conv2d.rs (pad stage, extended
    rows, 8 x 48 register tiles: `tvm_conv_extended`)."""
    import tvm
    from tvm import te, s_tir
    C, F, H, W = CONV["C"], CONV["F"], CONV["H"], CONV["W"]
    data = te.placeholder((1, C, H, W), name="data")
    w = te.placeholder((F, C, 3, 3), name="w")
    c = te.reduce_axis((0, C), name="c")
    r = te.reduce_axis((0, 3), name="r")
    s = te.reduce_axis((0, 3), name="s")
    padded = variant != "if"
    if variant == "tiled":
        return tvm_conv_extended(data, w, c, r, s)
    if padded:
        pad = te.compute(
            (1, C, H + 2, W + 2),
            lambda n, ci, y, x: tvm.tirx.if_then_else(
                tvm.tirx.all(y >= 1, y <= H, x >= 1, x <= W), data[n, ci, y - 1, x - 1], 0.0),
            name="pad")
        out = te.compute(
            (1, F, H, W),
            lambda n, f, y, x: te.sum(pad[n, c, y + r, x + s] * w[f, c, r, s], axis=[c, r, s]),
            name="out")
    else:
        out = te.compute(
            (1, F, H, W),
            lambda n, f, y, x: te.sum(
                tvm.tirx.if_then_else(
                    tvm.tirx.all(y + r >= 1, y + r <= H, x + s >= 1, x + s <= W),
                    data[n, c, y + r - 1, x + s - 1], 0.0) * w[f, c, r, s],
                axis=[c, r, s]),
            name="out")
    sch = s_tir.Schedule(te.create_prim_func([data, w, out]))
    if padded:
        pb = sch.get_sblock("pad")
        _pn, pc, _py, _px = sch.get_loops(pb)
        sch.parallel(pc)
    ob = sch.get_sblock("out")
    wb = sch.cache_write(ob, 0, "local")  # wb copies out_local out; ob computes into it
    _n, f, y, _x = sch.get_loops(wb)
    fy = sch.fuse(f, y)
    sch.parallel(fy)
    sch.compute_at(ob, fy)
    ox, oc, orr, os_ = sch.get_loops(ob)[-4:]
    if padded:
        # conv2d_padded: x split by 8, reorder(xo, c, r, s, xi), unroll s, vectorize xi.
        xo, xi = sch.split(ox, [None, 8])
        sch.reorder(xo, oc, orr, os_, xi)
        sch.unroll(os_)
        sch.vectorize(xi)
    else:
        # conv2d_if: reorder(c, r, s, x), unroll s.
        sch.reorder(oc, orr, os_, ox)
        sch.unroll(os_)
    sch.decompose_reduction(ob, oc)
    return sch


def tvm_conv_extended(data, w, c, r, s):
    """examples/kernels/conv2d.rs: the convolution over extended rows. Position p of an
    output plane is row p // 58, column p % 58 of the padded width, so the window's reads
    are pad at the flat offset p + 58 r + s; 3264 positions (68 x 48), then the copy of
    the 56 real columns. Same schedule: pad parallel over c; ext split f by 8 and p by
    48, reorder(n, fo, po, fi, pi), parallel fo, vectorize pi; the local cache at po:
    reorder(c, r, s, f, p), unroll s and f, vectorize p; out parallel over f, x split by
    8 and vectorized."""
    import tvm
    from tvm import te, s_tir
    C, F, H, W = CONV["C"], CONV["F"], CONV["H"], CONV["W"]
    WP, P = W + 2, 3264
    # The padded planes flat (their best form: our compiler takes the 2-D pad with the
    # `// 58`, `% 58` reads and simplifies them; given those, TVM and Halide kept the
    # division in the vector index and ran 12-14x slower).
    pad = te.compute(
        (1, C, (H + 3) * WP),
        lambda n, ci, q: tvm.tirx.if_then_else(
            tvm.tirx.all(q // WP >= 1, q // WP <= H, q % WP >= 1, q % WP <= W),
            data[n, ci, q // WP - 1, q % WP - 1], 0.0),
        name="pad")
    ext = te.compute(
        (1, F, P),
        lambda n, f, p: te.sum(pad[n, c, p + r * WP + s] * w[f, c, r, s], axis=[c, r, s]),
        name="ext")
    out = te.compute((1, F, H, W), lambda n, f, y, x: ext[n, f, y * WP + x], name="out")
    sch = s_tir.Schedule(te.create_prim_func([data, w, out]))
    pb = sch.get_sblock("pad")
    _pn, pc, _pq = sch.get_loops(pb)
    sch.parallel(pc)
    eb = sch.get_sblock("ext")
    wb = sch.cache_write(eb, 0, "local")
    n, f, p = sch.get_loops(wb)
    fo, fi = sch.split(f, [None, 8])
    po, pi = sch.split(p, [None, 48])
    sch.reorder(n, fo, po, fi, pi)
    sch.parallel(fo)
    sch.vectorize(pi)
    sch.compute_at(eb, po)
    of, op, oc, orr, os_ = sch.get_loops(eb)[-5:]
    sch.reorder(oc, orr, os_, of, op)
    sch.unroll(os_)
    sch.unroll(of)
    sch.vectorize(op)
    sch.decompose_reduction(eb, oc)
    ob = sch.get_sblock("out")
    _n, f, _y, x = sch.get_loops(ob)
    sch.parallel(f)
    _xo, xi = sch.split(x, [None, 8])
    sch.vectorize(xi)
    return sch


def tvm_row_rfactor(sch, name, lanes):
    """Split the row reduction `name` (loops i, k at the root) by `lanes` and rfactor the
    inner part: `name_rf` holds `lanes` partial results per row (lane axis first), which
    `name` then combines. Done at the root, since TIR's rfactor wants the reduction block
    to be the first child of its outermost loop (it is not once computed at a row)."""
    k = sch.get_loops(sch.get_sblock(name))[-1]
    _ko, ki = sch.split(k, [None, lanes])
    return sch.rfactor(ki, 0)


def tvm_vectorize_rf(sch, rf):
    """An rfactor block computed at a row (loops lane, ko): reorder(ko, lane) so the
    factored lane axis is innermost, vectorize it, and zero the partial results before ko."""
    lane, ko = sch.get_loops(rf)[-2:]
    sch.reorder(ko, lane)
    sch.vectorize(lane)  # (vectorize before decompose_reduction: TIR refuses after)
    sch.decompose_reduction(rf, ko)


def tvm_softmax():
    """softmax.rs's CPU schedule: y parallel over rows, j split by 32 and vectorized,
    m, e and s computed per row, e's j split by 32 and vectorized, m and s rfactor'd into
    64 partial results (m_rf, s_rf per row, 64 lanes wide) that m and s then combine."""
    from tvm import te, s_tir
    X = te.placeholder((ROWS, COLS), name="x")
    k1 = te.reduce_axis((0, COLS), name="k1")
    m = te.compute((ROWS,), lambda i: te.max(X[i, k1], axis=k1), name="m")
    e = te.compute((ROWS, COLS), lambda i, j: te.exp(X[i, j] - m[i]), name="e")
    k2 = te.reduce_axis((0, COLS), name="k2")
    s = te.compute((ROWS,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    y = te.compute((ROWS, COLS), lambda i, j: e[i, j] / s[i], name="y")
    sch = s_tir.Schedule(te.create_prim_func([X, y]))
    m_rf = tvm_row_rfactor(sch, "m", 64)
    s_rf = tvm_row_rfactor(sch, "s", 64)
    yb = sch.get_sblock("y")
    i, j = sch.get_loops(yb)
    sch.parallel(i)
    _jo, ji = sch.split(j, [None, 32])
    sch.vectorize(ji)
    # consumers first, so each lands before its consumer
    for b in (sch.get_sblock("s"), s_rf, sch.get_sblock("e"), sch.get_sblock("m"), m_rf):
        sch.compute_at(b, i)
    _eo, ei = sch.split(sch.get_loops(sch.get_sblock("e"))[-1], [None, 32])
    sch.vectorize(ei)
    tvm_vectorize_rf(sch, m_rf)
    tvm_vectorize_rf(sch, s_rf)
    return sch


def tvm_layernorm():
    """layernorm.rs's CPU schedule: y parallel over rows, j split by 16 and vectorized,
    s (row sum) and q (row sum of squared deviations from s/N) computed per row, each
    rfactor'd into 64 partial sums (s_rf, q_rf per row, 64 lanes wide) then combined.
    Without its `prefetch` of the next row: TensorIR (s_tir) has no prefetch primitive."""
    from tvm import te, s_tir
    X = te.placeholder((ROWS, COLS), name="x")
    G = te.placeholder((COLS,), name="gamma")
    Bt = te.placeholder((COLS,), name="beta")
    n = float(COLS)
    k1 = te.reduce_axis((0, COLS), name="k1")
    s = te.compute((ROWS,), lambda i: te.sum(X[i, k1], axis=k1), name="s")
    k2 = te.reduce_axis((0, COLS), name="k2")
    q = te.compute((ROWS,), lambda i: te.sum((X[i, k2] - s[i] / n) * (X[i, k2] - s[i] / n),
                                             axis=k2), name="q")
    y = te.compute((ROWS, COLS), lambda i, j: (X[i, j] - s[i] / n)
                   * te.rsqrt(q[i] / n + LN_EPS) * G[j] + Bt[j], name="y")
    sch = s_tir.Schedule(te.create_prim_func([X, G, Bt, y]))
    s_rf = tvm_row_rfactor(sch, "s", 64)
    q_rf = tvm_row_rfactor(sch, "q", 64)
    yb = sch.get_sblock("y")
    i, j = sch.get_loops(yb)
    sch.parallel(i)
    _jo, ji = sch.split(j, [None, 16])
    sch.vectorize(ji)
    for b in (sch.get_sblock("q"), q_rf, sch.get_sblock("s"), s_rf):
        sch.compute_at(b, i)
    tvm_vectorize_rf(sch, s_rf)
    tvm_vectorize_rf(sch, q_rf)
    return sch


def tvm_impl(kid):
    import numpy as np
    import tvm
    k = kind(kid)
    ins, ref = inputs(k)
    if kid.startswith("sgemm"):
        bn = int(kid.split("_")[1][2:])
        sch = tvm_gemm(bn, cache=not kid.endswith("nocache"))
        oshape = (N, N)
    elif kid == "matmul":
        sch = tvm_gemm(32, cache=True, reg_tile=(8, 32))
        oshape = (N, N)
    elif kid.startswith("conv2d"):
        variant = {"conv2d_padded": "padded", "conv2d_if": "if", "conv2d": "tiled"}[kid]
        sch, oshape = tvm_conv(variant), (1, CONV["F"], CONV["H"], CONV["W"])
    elif kid == "softmax":
        sch, oshape = tvm_softmax(), (ROWS, COLS)
    elif kid == "layernorm":
        sch, oshape = tvm_layernorm(), (ROWS, COLS)
    else:
        raise KeyError(kid)
    target, cpu = tvm_target()
    lib = tvm.compile(sch.mod, target=target)
    f = lib["main"]
    dev = tvm.cpu()
    targs = [tvm.runtime.tensor(np.ascontiguousarray(x), dev) for x in ins]
    tout = tvm.runtime.tensor(np.full(oshape, np.nan, dtype=np.float32), dev)
    args = targs + [tout]
    return (lambda: f(*args)), (lambda: tout.numpy()), ref, f"llvm -mcpu={cpu}"


# --------------------------------------------------------------------------------- Halide


def hl_bounds(param_or_out, shape):
    """Constant bounds (min 0, dense row-major) on a buffer of numpy shape `shape`
    (Halide's dims are numpy's reversed)."""
    dims = list(reversed(shape))
    stride = 1
    for d, ext in enumerate(dims):
        param_or_out.dim(d).set_bounds(0, ext).set_stride(stride)
        stride *= ext


def halide_gemm(bn, cache, reg_tile=None):
    import halide as hl
    A = hl.ImageParam(hl.Float(32), 2, "A")  # A(k, i) = a[i, k]
    B = hl.ImageParam(hl.Float(32), 2, "B")  # B(j, k) = b[k, j]
    x, y, xo, yo, xi, yi = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi"))
    r = hl.RDom([(0, N)], "r")
    ro, ri = hl.RVar("ro"), hl.RVar("ri")
    bp = hl.Func("bp")  # bp(y, k, x) = bp[x, k, y] of kernels.rs
    bp[y, x, xo] = B[xo * bn + y, x]
    bp.compute_root().parallel(xo).vectorize(y, bn)
    C = hl.Func("C")  # C(j, i) = c[i, j]
    if cache or reg_tile:
        cc = hl.Func("cc")
        cc[x, y] = hl.f32(0)
        cc[x, y] += A[r, y] * bp[x % bn, r, x // bn]
        C[x, y] = cc[x, y]
        ty, tx = reg_tile if reg_tile else (bn, bn)
        if reg_tile:
            # matmul.rs: tiles of 128 rows x 32 columns, the rows split by 8, the cache at
            # the 8-row step (yio)
            yio, yii = hl.Var("yio"), hl.Var("yii")
            C.tile(x, y, xo, yo, xi, yi, tx, MATMUL_BLOCK).split(yi, yio, yii, ty) \
                .reorder(xi, yii, yio, xo, yo).parallel(yo).vectorize(xi)
            cc.compute_at(C, yio).vectorize(x, tx)
        else:
            C.tile(x, y, xo, yo, xi, yi, tx, ty).parallel(yo).vectorize(xi)
            cc.compute_at(C, xo).vectorize(x, tx)
        if reg_tile:
            # matmul.rs: reorder(ko, ki, ci, cj), unroll ki and ci, vectorize cj
            cc.update().split(r.x, ro, ri, 4).reorder(x, y, ri, ro).vectorize(x, tx) \
                .unroll(y).unroll(ri)
        else:
            # reorder(ko, mc, ki, nc) (Halide lists inner first), vectorize nc, unroll ki
            cc.update().split(r.x, ro, ri, 4).reorder(x, ri, y, ro).vectorize(x, bn).unroll(ri)
    else:
        # No cache: the init is its own (parallel, vectorized) loop nest before the update,
        # where TVM zeroes each 32 x 32 block just before its k loop.
        C[x, y] = hl.f32(0)
        C[x, y] += A[r, y] * bp[x % bn, r, x // bn]
        C.parallel(y).vectorize(x, 16)
        C.update().tile(x, y, xo, yo, xi, yi, bn, bn).split(r.x, ro, ri, 4) \
            .reorder(xi, ri, yi, ro, xo, yo).parallel(yo).vectorize(xi).unroll(ri)
    for p in (A, B):
        hl_bounds(p, (N, N))
    hl_bounds(C.output_buffer(), (N, N))
    return C, [A, B]


def halide_conv(tiled):
    """tiled=False: kernels.rs conv2d_padded; tiled=True: examples/kernels/conv2d.rs
    (`halide_conv_extended`)."""
    import halide as hl
    Cn, F, H, W = CONV["C"], CONV["F"], CONV["H"], CONV["W"]
    data = hl.ImageParam(hl.Float(32), 3, "data")  # data(x, y, c) = data[0, c, y, x]
    w = hl.ImageParam(hl.Float(32), 4, "w")  # w(s, r, c, f) = w[f, c, r, s]
    x, y, c, f, fy, xo, xi = (hl.Var(n) for n in ("x", "y", "c", "f", "fy", "xo", "xi"))
    pad = hl.Func("pad")
    inside = (x >= 1) & (x <= W) & (y >= 1) & (y <= H)
    pad[x, y, c] = hl.select(inside, data[hl.clamp(x - 1, 0, W - 1), hl.clamp(y - 1, 0, H - 1), c],
                             hl.f32(0))
    rd = hl.RDom([(0, Cn), (0, 3), (0, 3)], "rd")  # rd.x = c, rd.y = r, rd.z = s
    ol = hl.Func("ol")
    ol[x, y, f] = hl.f32(0)
    ol[x, y, f] += pad[x + rd.z, y + rd.y, rd.x] * w[rd.z, rd.y, rd.x, f]
    out = hl.Func("out")
    out[x, y, f] = ol[x, y, f]
    if tiled:
        return halide_conv_extended(pad, data, w)
    pad.compute_root().parallel(c)
    # kernels.rs conv2d_padded: pad computed first, parallel over c; out's f and y
    # fused and parallel, the local accumulator per (f, y): x split by 8, reorder(xo,
    # c, r, s, xi), unroll s, vectorize xi. (The copy out of the accumulator is
    # vectorized by 8.)
    out.fuse(y, f, fy).parallel(fy).vectorize(x, 8)
    ol.compute_at(out, fy).vectorize(x, 8)
    ol.update().split(x, xo, xi, 8).reorder(xi, rd.z, rd.y, rd.x, xo).vectorize(xi) \
        .unroll(rd.z)
    hl_bounds(data, (Cn, H, W))
    hl_bounds(w, (F, Cn, 3, 3))
    hl_bounds(out.output_buffer(), (F, H, W))
    return out, [data, w]


def halide_conv_extended(pad, data, w):
    """examples/kernels/conv2d.rs over extended rows (see `tvm_conv_extended`): the flat
    pad computed first, parallel over c; ext split f by 8 and p by 48, parallel fo,
    vectorize pi; the accumulator at po: reorder(c, r, s, f, p), unroll s and f,
    vectorize p; out parallel over f, vectorized by 8."""
    import halide as hl
    Cn, F, H, W = CONV["C"], CONV["F"], CONV["H"], CONV["W"]
    WP = W + 2
    p, f, x, y, po, pi, fo, fi = (hl.Var(n) for n in ("p", "f", "x", "y", "po", "pi", "fo", "fi"))
    rd = hl.RDom([(0, Cn), (0, 3), (0, 3)], "rd")  # rd.x = c, rd.y = r, rd.z = s
    # The padded planes flat (see `tvm_conv_extended`).
    q, c = hl.Var("q"), hl.Var("c")
    padf = hl.Func("padf")
    padf[q, c] = pad[q % WP, q / WP, c]
    el = hl.Func("el")
    el[p, f] = hl.f32(0)
    el[p, f] += padf[p + rd.y * WP + rd.z, rd.x] * w[rd.z, rd.y, rd.x, f]
    ext = hl.Func("ext")
    ext[p, f] = el[p, f]
    out = hl.Func("out")
    out[x, y, f] = ext[y * WP + x, f]
    pad.compute_inline()
    padf.compute_root().bound(q, 0, (H + 3) * WP).parallel(c)
    ext.compute_root().bound(p, 0, 3264).split(f, fo, fi, 8).split(p, po, pi, 48) \
        .reorder(pi, fi, po, fo).parallel(fo).vectorize(pi)
    el.compute_at(ext, po).vectorize(p).unroll(f)
    el.update().reorder(p, f, rd.z, rd.y, rd.x).vectorize(p).unroll(f).unroll(rd.z)
    out.parallel(f).vectorize(x, 8)
    hl_bounds(data, (Cn, H, W))
    hl_bounds(w, (F, Cn, 3, 3))
    hl_bounds(out.output_buffer(), (F, H, W))
    return out, [data, w]


def hl_row_reduce(f, r, u, lanes, consumer, row):
    """Vectorize the row reduction f (update over r) by rfactor into `lanes` partial
    results, computed per row of the consumer."""
    import halide as hl
    ro, ri = hl.RVar(f.name() + "_ro"), hl.RVar(f.name() + "_ri")
    f.compute_at(consumer, row)
    intm = f.update().split(r.x, ro, ri, lanes).rfactor(ri, u)
    intm.compute_at(consumer, row).vectorize(u)
    intm.update().vectorize(u)


def halide_softmax():
    import halide as hl
    X = hl.ImageParam(hl.Float(32), 2, "x")  # X(j, i) = x[i, j]
    x, y, u = hl.Var("x"), hl.Var("y"), hl.Var("u")
    r1, r2 = hl.RDom([(0, COLS)], "r1"), hl.RDom([(0, COLS)], "r2")
    mx = hl.Func("mx")
    mx[y] = hl.f32(-math.inf)
    mx[y] = hl.max(mx[y], X[r1, y])
    e = hl.Func("e")
    e[x, y] = hl.exp(X[x, y] - mx[y])
    s = hl.Func("s")
    s[y] = hl.f32(0)
    s[y] += e[r2, y]
    Y = hl.Func("y")
    Y[x, y] = e[x, y] / s[y]
    # Fused per row: rows parallel; max, exponentials and sum per row, the element
    # passes 32 lanes (the max and the sum vectorized by rfactor into 64 partial results).
    Y.parallel(y).vectorize(x, 32)
    e.compute_at(Y, y).vectorize(x, 32)
    hl_row_reduce(mx, r1, u, 64, Y, y)
    hl_row_reduce(s, r2, u, 64, Y, y)
    hl_bounds(X, (ROWS, COLS))
    hl_bounds(Y.output_buffer(), (ROWS, COLS))
    return Y, [X]


def halide_layernorm():
    import halide as hl
    X = hl.ImageParam(hl.Float(32), 2, "x")
    G = hl.ImageParam(hl.Float(32), 1, "gamma")
    Bt = hl.ImageParam(hl.Float(32), 1, "beta")
    x, y, u = hl.Var("x"), hl.Var("y"), hl.Var("u")
    r1, r2 = hl.RDom([(0, COLS)], "r1"), hl.RDom([(0, COLS)], "r2")
    s1 = hl.Func("s1")
    s1[y] = hl.f32(0)
    s1[y] += X[r1, y]
    mean = hl.Func("mean")
    mean[y] = s1[y] / COLS
    s2 = hl.Func("s2")
    s2[y] = hl.f32(0)
    d = X[r2, y] - mean[y]
    s2[y] += d * d
    inv = hl.Func("inv")
    inv[y] = hl.f32(1.0) / hl.sqrt(s2[y] / COLS + hl.f32(LN_EPS))
    Y = hl.Func("y")
    Y[x, y] = (X[x, y] - mean[y]) * inv[y] * G[x] + Bt[x]
    # Fused per row: rows parallel, the mean and the variance (two passes over the row)
    # vectorized by rfactor into 64 partial sums, the output 16 lanes.
    Y.parallel(y).vectorize(x, 16)
    mean.compute_at(Y, y)
    inv.compute_at(Y, y)
    hl_row_reduce(s1, r1, u, 64, Y, y)
    hl_row_reduce(s2, r2, u, 64, Y, y)
    # Without layernorm.rs's `y.prefetch(x, y.i, 1)`: Halide 21 drops
    # `Y.prefetch(X, y, y, 1)` here ("the prefetched area will always be empty").
    hl_bounds(X, (ROWS, COLS))
    hl_bounds(G, (COLS,))
    hl_bounds(Bt, (COLS,))
    hl_bounds(Y.output_buffer(), (ROWS, COLS))
    return Y, [X, G, Bt]


def halide_impl(kid):
    import halide as hl
    import numpy as np
    k = kind(kid)
    ins, ref = inputs(k)
    if kid.startswith("sgemm"):
        bn = int(kid.split("_")[1][2:])
        fn, params = halide_gemm(bn, cache=not kid.endswith("nocache"))
    elif kid == "matmul":
        fn, params = halide_gemm(32, cache=True, reg_tile=(8, 32))
    elif kid in ("conv2d_padded", "conv2d"):
        fn, params = halide_conv(tiled=kid == "conv2d")
        ins = (ins[0][0], ins[1])  # batch 1: data as [c, y, x]
        ref = ref[0]
    elif kid == "softmax":
        fn, params = halide_softmax()
    elif kid == "layernorm":
        fn, params = halide_layernorm()
    else:
        raise KeyError(kid)
    target = hl.get_jit_target_from_environment()
    call = fn.compile_to_callable(params, target)
    out = aligned(np.full(ref.shape, np.nan, dtype=np.float32))
    bufs = [hl.Buffer(a) for a in ins] + [hl.Buffer(out)]
    return (lambda: call(*bufs)), (lambda: out), ref, str(target)


# ------------------------------------------------------------------------------------ ORT


def ort_model(kid):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    f32 = TensorProto.FLOAT
    inits = []
    if kid.startswith("conv2d"):
        (_d, w), _ = inputs("conv")
        C, F, H, W = CONV["C"], CONV["F"], CONV["H"], CONV["W"]
        inits = [numpy_helper.from_array(np.ascontiguousarray(w), "w")]
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                pads=[1, 1, 1, 1], strides=[1, 1])
        xin, yshape, opset = [1, C, H, W], [1, F, H, W], 17
    elif kid == "softmax":
        node = helper.make_node("Softmax", ["x"], ["y"], axis=-1)
        xin, yshape, opset = [ROWS, COLS], [ROWS, COLS], 17
    elif kid == "layernorm":
        (_x, g, bt), _ = inputs("layernorm")
        inits = [numpy_helper.from_array(np.ascontiguousarray(g), "gamma"),
                 numpy_helper.from_array(np.ascontiguousarray(bt), "beta")]
        node = helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1,
                                epsilon=LN_EPS)
        xin, yshape, opset = [ROWS, COLS], [ROWS, COLS], 17
    else:
        raise KeyError(kid)
    graph = helper.make_graph([node], kid, [helper.make_tensor_value_info("x", f32, xin)],
                              [helper.make_tensor_value_info("y", f32, yshape)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    return model.SerializeToString()


def ort_impl(kid):
    import numpy as np
    import onnxruntime as ort
    k = kind(kid)
    ins, ref = inputs(k)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads()
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = auto_ort_model(kid) if kid.startswith("auto_") else ort_model(kid)
    sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    x = np.ascontiguousarray(ins[0])
    out = aligned(np.full(ref.shape, np.nan, dtype=np.float32))
    io = sess.io_binding()
    io.bind_cpu_input("x", x)
    io.bind_output("y", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
    return (lambda: sess.run_with_iobinding(io)), (lambda: out), ref, f"onnxruntime {ort.__version__} CPU"


# --------------------------------------------------------------------------------- driver

# Kernels that are one and the same computation for a peer without schedules.
SHARED = {("numpy", "gemm"): "gemm", ("ort", "conv"): "conv"}

IMPLS = {"numpy": numpy_impl, "tvm": tvm_impl, "halide": halide_impl, "ort": ort_impl}


def run_peer(peer, ids):
    """Check and time each kernel of `ids` that `peer` has; one result dict each."""
    results = []
    shared = {}  # identical peer computations (numpy's matmul, ORT's Conv) timed once
    for kid in PEERS[peer]:
        if kid not in ids:
            continue
        res = {"id": kid, "peer": peer}
        key = SHARED.get((peer, kind(kid)))
        if key in shared:
            res.update({k: v for k, v in shared[key].items() if k not in ("id", "peer")})
            res["same_as"] = shared[key]["id"]
            if "error" not in res:
                print(f"  {PEER_LABELS[peer]:7s} {kid:20s} {fmt_time(res['median_s']):>10s}  "
                      f"(the same computation as {res['same_as']})", file=sys.stderr, flush=True)
            results.append(res)
            continue
        try:
            t0 = time.perf_counter()
            fn, get, ref, note = IMPLS[peer](kid)
            build_s = time.perf_counter() - t0
            fn()
            rtol, atol = TOL[kind(kid)]
            err = check(f"{PEER_LABELS[peer]} {kid}", get(), ref, rtol, atol)
            med, iters, samples = bench(fn)
            res.update(median_s=med, iters=iters, samples=samples, max_rel_err=err, note=note,
                       build_s=build_s)
            print(f"  {PEER_LABELS[peer]:7s} {kid:20s} {fmt_time(med):>10s}  "
                  f"({samples} x {iters} iters, max err {err:.1e} of max|ref|; {note})",
                  file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001
            res.update(error=f"{type(e).__name__}: {e}")
            print(f"  {PEER_LABELS[peer]:7s} {kid:20s} FAILED: {res['error']}", file=sys.stderr,
                  flush=True)
        results.append(res)
        if key is not None:
            shared[key] = res
    return results


def fmt_time(s):
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def all_ids():
    return list(KERNELS) + list(EXTRA_ROWS)


def parse_only(only):
    if not only:
        return all_ids()
    ids = [s.strip() for s in only.split(",") if s.strip()]
    unknown = [i for i in ids if i not in all_ids()]
    if unknown:
        sys.exit(f"peers: unknown id(s) {unknown}; known: {', '.join(all_ids())}")
    if "vector_add" in ids and "copy" not in ids:
        ids.append("copy")  # the copy bandwidth goes with the vector add
    return [i for i in all_ids() if i in ids]  # the table's order


def versions():
    v = {}
    from importlib import metadata
    for p in ("numpy", "apache-tvm", "halide", "onnx", "onnxruntime"):
        try:
            v[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            v[p] = None
    return v


def run_all(ids, peers):
    """Each peer library in its own process, with its thread environment."""
    results = []
    failed = False
    warm, samples, sample_s = timing_config()
    print(f"peers: {threads()} threads, warm-up {warm} s, {samples} samples of >= {sample_s} s",
          file=sys.stderr, flush=True)
    for peer in peers:
        if not any(k in ids for k in PEERS[peer]):
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--peer", peer, "--only", ",".join(ids),
               "--json", "-"]
        p = subprocess.run(cmd, env=peer_env(peer), stdout=subprocess.PIPE, text=True)
        try:
            res = json.loads(p.stdout)
        except json.JSONDecodeError:
            res = [{"id": k, "peer": peer, "error": f"peer process exited {p.returncode}"}
                   for k in PEERS[peer] if k in ids]
        if p.returncode != 0:
            failed = True
        results.extend(res)
    return results, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma-separated kernel ids (default: all)")
    ap.add_argument("--peer", choices=sorted(PEERS), help="run one peer library in this process")
    ap.add_argument("--peers", help="comma-separated peer libraries to run (default: all)")
    ap.add_argument("--json", help="write the results as JSON to this file ('-': stdout)")
    args = ap.parse_args()
    ids = parse_only(args.only)
    if args.peer:
        results = run_peer(args.peer, ids)
        failed = any("error" in r for r in results)
    else:
        peers = [p.strip() for p in args.peers.split(",")] if args.peers else list(PEERS)
        results, failed = run_all(ids, peers)
        failed = failed or any("error" in r for r in results)
    doc = {"threads": threads(), "timing": dict(zip(("warmup_s", "samples", "sample_s"), timing_config())),
           "versions": versions(), "results": results} if not args.peer else results
    if args.json == "-":
        json.dump(doc, sys.stdout)
    elif args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
    if failed:
        print("peers: some peers FAILED (see above)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
