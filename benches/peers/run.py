#!/usr/bin/env python3
"""The peer comparison: tvm-rs (criterion, `cargo bench --bench peers`) against TVM,
Halide, numpy and ONNX Runtime (`peers.py`, in the venv of `setup.sh`), as one markdown
table, also written to target/peers/table.md.

    bash benches/peers/setup.sh              # once: target/peers-venv
    python3 benches/peers/run.py             # cargo bench + peers + table
    python3 benches/peers/run.py --no-cargo  # read criterion's existing results
    python3 benches/peers/run.py --only sgemm_bn32,softmax
    python3 benches/peers/run.py --rounds 3  # three rounds, tvm-rs and the peers alternating
    PEERS_QUICK=1 python3 benches/peers/run.py   # smoke run (short warm-up, few samples)

Ratio = peer time / tvm-rs time (> 1: tvm-rs is faster). With --rounds R, the whole
comparison runs R times, tvm-rs first in odd rounds and the peers first in even ones (so
neither side always runs on a host that has warmed up or drifted); each cell is then the
median of the R rounds' medians, and each ratio the median of the R per-round ratios, with
their range below the table. Threads: PEERS_THREADS (default:
the CPUs this process may use) for every side: TVM_NUM_THREADS, HL_NUM_THREADS,
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, RAYON_NUM_THREADS and ORT's intra_op_num_threads.
Needs only the standard library; works from any cwd.
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in benches/peers
import peers  # noqa: E402  (stdlib-only at import time)

VENV_PY = os.path.join(ROOT, "target", "peers-venv", "bin", "python")
PEER_ORDER = ["tvm", "halide", "numpy", "ort"]
PEER_HEAD = {"tvm": "TVM 0.27", "halide": "Halide 21", "numpy": "numpy (OpenBLAS)",
             "ort": "ONNX Runtime"}


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")


def quick():
    return os.environ.get("PEERS_QUICK", "") not in ("", "0")


def run_cargo(ids, extra):
    env = peers.peer_env("cargo")
    # criterion's filter is a regex over "group/function"
    bench_ids = [i for i in ids if i in peers.KERNELS]
    cmd = ["cargo", "bench", "--bench", "peers", "--", "--noplot"]
    if quick():
        cmd += ["--warm-up-time", "0.2", "--measurement-time", "1"]
    cmd += extra
    if set(bench_ids) != set(peers.KERNELS):
        cmd.append("^(" + "|".join(bench_ids) + ")/")
    print("run.py: " + " ".join(shlex.quote(c) for c in cmd) + f"   (threads {peers.threads()})",
          file=sys.stderr, flush=True)
    r = subprocess.run(cmd, cwd=ROOT, env=env)
    if r.returncode != 0:
        sys.exit(f"run.py: cargo bench --bench peers failed (exit {r.returncode})")


def read_criterion(ids):
    """id -> (median seconds, estimates.json mtime) or None where criterion has none."""
    out = {}
    for kid in ids:
        path = os.path.join(target_dir(), "criterion", kid, "tvm-rs", "new", "estimates.json")
        try:
            with open(path) as fh:
                est = json.load(fh)
            out[kid] = (est["median"]["point_estimate"] * 1e-9, os.path.getmtime(path))
        except (OSError, KeyError, ValueError):
            out[kid] = None
    return out


def run_peers(ids, peer_list):
    if not os.path.exists(VENV_PY):
        sys.exit(f"run.py: no venv at {os.path.dirname(os.path.dirname(VENV_PY))}; "
                 f"run: bash {os.path.relpath(os.path.join(HERE, 'setup.sh'))}")
    out = os.path.join(target_dir(), "peers", "peers.json")
    cmd = [VENV_PY, os.path.join(HERE, "peers.py"), "--only", ",".join(ids), "--json", out]
    if peer_list:
        cmd += ["--peers", ",".join(peer_list)]
    r = subprocess.run(cmd, cwd=ROOT)
    with open(out) as fh:
        doc = json.load(fh)
    return doc, r.returncode


def throughput(unit, amount, s):
    if unit == "flop":
        return f"{amount / s * 1e-9:.1f} GFLOP/s"
    return f"{amount / s * 1e-9:.1f} GB/s"


def cell(unit, amount, s):
    return f"{peers.fmt_time(s)} ({throughput(unit, amount, s)})"


def combine(rounds):
    """One (criterion results, peer doc, exit code) from several rounds, plus the per-round
    ratios: {(id, peer): [ratio, ...]}. Times are medians over the rounds."""
    if len(rounds) == 1:
        rs, doc, rc = rounds[0]
        return rs, doc, rc, {}
    rs = {}
    for kid in rounds[0][0]:
        vals = [r[0][kid] for r in rounds if r[0].get(kid)]
        rs[kid] = (statistics.median(v[0] for v in vals), min(v[1] for v in vals)) if vals else None
    by_key = {}
    for _rs, d, _rc in rounds:
        for r in d["results"]:
            by_key.setdefault((r["id"], r["peer"]), []).append(r)
    results, spread = [], {}
    for key, rlist in by_key.items():
        ok = [r for r in rlist if "error" not in r]
        if len(ok) < len(rlist):
            results.append(next(r for r in rlist if "error" in r))
            continue
        merged = dict(ok[0])
        merged["median_s"] = statistics.median(r["median_s"] for r in ok)
        results.append(merged)
        ratios = [r["median_s"] / rnd[0][key[0]][0] for r, rnd in zip(ok, rounds)
                  if rnd[0].get(key[0])]
        if ratios:
            spread[key] = ratios
    doc = dict(rounds[0][1])
    doc["results"] = results
    rc = max(r[2] for r in rounds)
    return rs, doc, rc, spread


def spread_lines(ids, spread):
    lines = []
    for kid in ids:
        cells = [f"{peers.PEER_LABELS[p]} {min(v):.2f}-{max(v):.2f}"
                 for p in PEER_ORDER if (v := spread.get((kid, p)))]
        if cells:
            lines.append(f"- `{kid}`: " + ", ".join(cells))
    return "\n".join(lines)


def table(ids, rs, doc, spread=None):
    spread = spread or {}
    res = {(r["id"], r["peer"]): r for r in doc["results"]}
    cols = [p for p in PEER_ORDER if any((k, p) in res for k in ids)]
    head = ["kernel", "tvm-rs"]
    for p in cols:
        head += [PEER_HEAD[p], f"{peers.PEER_LABELS[p]} / tvm-rs"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for kid in ids:
        desc, unit, amount = {**peers.KERNELS, **peers.EXTRA_ROWS}[kid]
        base = rs.get(kid)
        row = [f"`{kid}`: {desc}", cell(unit, amount, base[0]) if base else
               ("—" if kid in peers.EXTRA_ROWS else "no result")]
        for p in cols:
            r = res.get((kid, p))
            if r is None:
                row += ["—", "—"]
            elif "error" in r:
                row += ["FAILED", "—"]
            else:
                t = cell(unit, amount, r["median_s"])
                if r.get("same_as"):
                    t += f" (= `{r['same_as']}`)"
                ratios = spread.get((kid, p))
                ratio = statistics.median(ratios) if ratios else (
                    r["median_s"] / base[0] if base else None)
                row += [t, f"{ratio:.2f}" if ratio is not None else "—"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-cargo", action="store_true",
                    help="skip `cargo bench`, read criterion's existing results")
    ap.add_argument("--only", help="comma-separated kernel ids: " + ",".join(peers.all_ids()))
    ap.add_argument("--peers", help="comma-separated peer libraries: " + ",".join(PEER_ORDER))
    ap.add_argument("--quick", action="store_true", help="the same as PEERS_QUICK=1")
    ap.add_argument("--criterion-args", default="", help="extra arguments for criterion")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the comparison this many times, alternating which side goes "
                         "first; report medians over the rounds")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("run.py: --rounds must be at least 1")
    if args.quick:
        os.environ["PEERS_QUICK"] = "1"
    ids = peers.parse_only(args.only)
    peer_list = [p.strip() for p in args.peers.split(",")] if args.peers else None
    if peer_list and not set(peer_list) <= set(PEER_ORDER):
        sys.exit(f"run.py: unknown peer in {peer_list}; known: {PEER_ORDER}")
    os.environ["PEERS_THREADS"] = str(peers.threads())

    started = time.time()
    rounds = []  # per round: (criterion results, peer doc, peer exit code)
    for rnd in range(args.rounds):
        if args.rounds > 1:
            print(f"run.py: round {rnd + 1} of {args.rounds}", file=sys.stderr, flush=True)
        peers_first = rnd % 2 == 1
        if peers_first:
            doc, rc = run_peers(ids, peer_list)
        if not args.no_cargo:
            run_cargo(ids, shlex.split(args.criterion_args))
        rs = read_criterion([i for i in ids if i in peers.KERNELS])
        if not peers_first:
            doc, rc = run_peers(ids, peer_list)
        rounds.append((rs, doc, rc))
    rs, doc, rc, spread = combine(rounds)

    warm, samples, sample_s = peers.timing_config()
    v = doc.get("versions", {})
    stale = [k for k, x in rs.items() if x and x[1] < started - 1]
    notes = [
        f"Peer comparison, {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, "
        f"{doc['threads']} threads everywhere. Medians; ratio = peer time / tvm-rs time "
        f"(> 1: tvm-rs faster)."
        + (f" {len(rounds)} rounds (tvm-rs first in odd rounds, the peers first in even "
           f"ones): times are medians of the rounds' medians, ratios medians of the "
           f"per-round ratios." if len(rounds) > 1 else ""),
        f"Peers: warm-up {warm} s, {samples} samples of >= {sample_s} s"
        + (" (PEERS_QUICK: smoke run, not a measurement)." if quick() else "."),
        "Versions: " + ", ".join(f"{k} {v[k]}" for k in v if v[k]) + ".",
    ]
    if args.no_cargo or stale:
        notes.append("tvm-rs: criterion's existing results (--no-cargo)" if args.no_cargo else
                     f"tvm-rs: stale criterion results for {', '.join(stale)}")
    missing = [k for k, x in rs.items() if x is None]
    if missing:
        notes.append(f"No criterion result (target/criterion/<id>/tvm-rs/new/estimates.json) for: "
                     f"{', '.join(missing)}.")
    text = "\n".join(notes) + "\n\n" + table(ids, rs, doc, spread) + "\n"
    if len(rounds) > 1:
        text += "\nPer-round ratios (min-max over the rounds):\n\n" + spread_lines(ids, spread) + "\n"
    out = os.path.join(target_dir(), "peers", "table.md")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as fh:
        fh.write(text)
    print()
    print(text)
    print(f"(written to {out})", file=sys.stderr)
    if rc != 0:
        sys.exit("run.py: some peers FAILED (see above)")


if __name__ == "__main__":
    main()
