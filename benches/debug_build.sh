#!/usr/bin/env bash
# The example kernels (examples/debug-build) in every profile a user's build can give
# them, in one run: release; a debug build with the kernel crate at `opt-level = 3` (the
# workspace's profile and the README's recipe: debug assertions and overflow checks on);
# the same with both off; and a plain debug build (the kernel crate unoptimized). Beside
# them, the plain Rust loops the kernels replace, in a debug build. Prints a table of
# medians and ratios.
#
#   bash benches/debug_build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
k='profile.dev.package.tvm-example-kernels'
run() { cargo run -q -p tvm-debug-build "$@" 2>&1; }
out=$(mktemp -d)
run --release >"$out/release"
run -- --loops >"$out/recipe"
run --config "$k.debug-assertions=false" --config "$k.overflow-checks=false" >"$out/opt3"
run --config "$k.opt-level=0" --config "$k.debug-assertions=true" --config "$k.overflow-checks=true" >"$out/plain"
python3 - "$out" <<'PY'
import re, sys, pathlib
d = pathlib.Path(sys.argv[1])
def table(path, section=0):
    parts = path.read_text().split("the plain loops")
    text = parts[section] if section < len(parts) else ""
    return {m[1].strip(): float(m[2]) for m in re.finditer(r"^  (.+?)\s+([0-9.]+) ms$", text, re.M)}
rel, rec, o3, plain = (table(d / n) for n in ("release", "recipe", "opt3", "plain"))
loops = table(d / "recipe", 1)
print("| kernel | release | debug, kernels `opt-level = 3` (the recipe) | the same, debug assertions and overflow checks off | plain debug | plain debug loop | plain debug / release | plain debug / loop |")
print("|---|---|---|---|---|---|---|---|")
for name, r in rel.items():
    print(f"| {name} | {r:.2f} ms | {rec[name]:.2f} ms ({rec[name]/r:.1f}x) | {o3[name]:.2f} ms ({o3[name]/r:.1f}x) "
          f"| {plain[name]:.1f} ms | {loops[name]:.1f} ms | {plain[name]/r:.0f}x | {plain[name]/loops[name]:.2f} |")
PY
rm -rf "$out"
