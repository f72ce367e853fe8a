#!/usr/bin/env bash
# Builds, here (where the Rust toolchain is), everything the CUDA checks run on a GPU
# machine that has no Rust: the release binaries of the backend suite (tests/backends),
# tests/device_tensors.rs, tvm-runtime's tests/cuda.rs and the `cuda` bench; stages them,
# stripped, in target/gpu-check/ (ignored, so the `device` tool's `carry` takes it along)
# with NVRTC 12.9 from target/cuda-venv (xz-compressed; run.sh prefers it to the
# machine's own, being the NVRTC the tests here use) and target/gpu-check/run.sh, which runs them there; then prints the `run` call.
#
#   ./scripts/gpu-check.sh                       build and stage
#   bash target/gpu-check/run.sh --dry-run       here: every binary runs, CUDA is skipped
#   bash target/gpu-check/run.sh                 on the GPU machine: a missing CUDA device fails
#
# run.sh writes a log per binary and summary.txt under $OUT (the `device` tool's output
# folder; /tmp/gpu-check-out elsewhere) and prints the summary last.

set -euo pipefail
cd "$(dirname "$0")/.."

stage=target/gpu-check
venv_lib=target/cuda-venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib
# Compressed NVRTC, kept between runs (compressing takes a minute); not carried itself.
xz_cache=target/gpu-check-nvrtc

# The executables of the artifacts that `cargo ... --message-format=json` built, as
# "target-name<TAB>path" lines.
executables() {
  if command -v jq >/dev/null; then
    jq -r 'select(.reason == "compiler-artifact" and .executable != null) | "\(.target.name)\t\(.executable)"'
  else
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"] + "\t" + m["executable"])'
  fi
}

# The path of the executable of target $1 in the listing on stdin.
pick() {
  awk -F '\t' -v name="$1" '$1 == name { path = $2 } END { if (path == "") exit 1; print path }'
}

echo "== building the release test binaries and the cuda bench"
tests_json=$(cargo test --release --no-run --message-format=json -p tvm-rs --test backends --test device_tensors | executables)
runtime_json=$(cargo test --release --no-run --message-format=json -p tvm-rs-runtime --test cuda | executables)
bench_json=$(cargo bench --no-run --message-format=json -p tvm-rs --bench cuda | executables)

rm -rf "$stage"
mkdir -p "$stage"
cp "$(pick backends <<<"$tests_json")" "$stage/backends"
cp "$(pick device_tensors <<<"$tests_json")" "$stage/device_tensors"
cp "$(pick cuda <<<"$runtime_json")" "$stage/runtime_cuda"
cp "$(pick cuda <<<"$bench_json")" "$stage/bench_cuda"
cp benches/peers/gpu_torch.py "$stage/gpu_torch.py"
strip "$stage"/backends "$stage"/device_tensors "$stage"/runtime_cuda "$stage"/bench_cuda

if [ -e "$venv_lib/libnvrtc.so.12" ]; then
  mkdir -p "$xz_cache" "$stage/nvrtc"
  for lib in libnvrtc.so.12 libnvrtc-builtins.so.12.9; do
    if [ ! -e "$xz_cache/$lib.xz" ] || [ "$venv_lib/$lib" -nt "$xz_cache/$lib.xz" ]; then
      echo "== compressing $lib (once)"
      xz -T0 -6 -c "$venv_lib/$lib" >"$xz_cache/$lib.xz.tmp"
      mv "$xz_cache/$lib.xz.tmp" "$xz_cache/$lib.xz"
    fi
    cp "$xz_cache/$lib.xz" "$stage/nvrtc/"
  done
else
  echo "warning: no $venv_lib/libnvrtc.so.12 (./scripts/test.sh installs it): NVRTC is not carried," \
    "so the GPU machine's own must be found" >&2
fi

cat >"$stage/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the CUDA checks staged by scripts/gpu-check.sh (see there). Usage:
#   bash target/gpu-check/run.sh [--dry-run]
# --dry-run (or GPU_CHECK_DRY_RUN=1): for a machine without a GPU; CUDA is not required,
# so the suites skip it and say why. GPU_CHECK_NVRTC=system: use the machine's NVRTC
# rather than the carried one. Without --dry-run, TVM_REQUIRE_CUDA=1 makes a missing CUDA
# device fail the backend suite, and TVM_REQUIRE_TOOLS=1 makes a missing NVRTC fail
# tvm-runtime's CUDA tests.
set -u
here=$(cd "$(dirname "$0")" && pwd)
dry=${GPU_CHECK_DRY_RUN:-0}
[ "${1:-}" = "--dry-run" ] && dry=1
out=${OUT:-/tmp/gpu-check-out}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
start=$(date +%s)

# ---- libraries: libcuda (the runtime looks for it on LD_LIBRARY_PATH and the standard
# directories only), NVRTC and cuBLAS (cudarc loads them by the names libnvrtc.so,
# libnvrtc.so.12, libcublas.so, libcublas.so.12, ..., which a CUDA 13 install lacks: a
# private folder links the unversioned names to the libraries found).
libdir=/tmp/gpu-check-lib
rm -rf "$libdir"
mkdir -p "$libdir"
dirs=()
add_dir() {
  local d
  for d in "${dirs[@]-}"; do [ "$d" = "$1" ] && return; done
  dirs+=("$1")
}

# The first file matching NAME.so.<digits>... in the toolkit, the loader's cache and the
# Python packages (nvidia/*/lib), in that order.
find_lib() {
  local name=$1 d f
  local cands=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64)
  while read -r f; do cands+=("$(dirname "$f")"); done < <(ldconfig -p 2>/dev/null | awk -v n="$name.so." 'index($1, n) == 1 { print $NF }')
  while read -r d; do cands+=("$d"); done < <(python3 - 2>/dev/null <<'PY'
import glob, site, sys
paths = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for p in paths:
    for d in sorted(glob.glob(p + "/nvidia/*/lib"), reverse=True):
        print(d)
PY
  )
  cands+=(/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib /usr/local/lib/python3*/dist-packages/nvidia/*/lib)
  for d in "${cands[@]}"; do
    for f in "$d/$name".so.[0-9]*; do
      [ -e "$f" ] || continue
      case $f in *stubs*|*.alt.*|*builtins*) continue ;; esac
      echo "$f"
      return 0
    done
  done
  return 1
}

cuda_lib=""
IFS=: read -ra ld_dirs <<<"${LD_LIBRARY_PATH:-}"
for d in ${ld_dirs[@]+"${ld_dirs[@]}"} /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
  case $d in ""|*stubs*|*compat*) continue ;; esac
  [ -e "$d/libcuda.so.1" ] && { cuda_lib=$d/libcuda.so.1; break; }
done
[ -z "$cuda_lib" ] && cuda_lib=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" && $NF !~ /stubs|compat/ { print $NF; exit }')
[ -n "$cuda_lib" ] && add_dir "$(dirname "$cuda_lib")"

# NVRTC: the carried 12.9 first (what the tests here use; the driver runs what it
# compiles, being newer), else the machine's; GPU_CHECK_NVRTC=system prefers the machine's.
nvrtc="" system_nvrtc=$(find_lib libnvrtc || true)
if [ "${GPU_CHECK_NVRTC:-}" != system ] && [ -e "$here/nvrtc/libnvrtc.so.12.xz" ]; then
  rm -rf /tmp/gpu-check-nvrtc
  mkdir -p /tmp/gpu-check-nvrtc
  for f in "$here"/nvrtc/*.xz; do
    t=/tmp/gpu-check-nvrtc/$(basename "$f" .xz)
    xz -dc "$f" >"$t" 2>/dev/null ||
      python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' "$f" "$t"
  done
  nvrtc=/tmp/gpu-check-nvrtc/libnvrtc.so.12
fi
[ -z "$nvrtc" ] && nvrtc=$system_nvrtc
if [ -n "$nvrtc" ]; then
  ln -sf "$nvrtc" "$libdir/libnvrtc.so"
  add_dir "$(dirname "$nvrtc")"
fi
cublas=$(find_lib libcublas || true)
if [ -n "$cublas" ]; then
  ln -sf "$cublas" "$libdir/libcublas.so"
  add_dir "$(dirname "$cublas")"  # libcublasLt beside it
fi
extra=$libdir
for d in "${dirs[@]-}"; do [ -n "$d" ] && extra=$extra:$d; done
export LD_LIBRARY_PATH=$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A fresh disk cache, so that every kernel goes through NVRTC once; plain f32 in cuBLAS.
export TVM_CUDA_CACHE=/tmp/gpu-check-cuda-cache
rm -rf "$TVM_CUDA_CACHE"
export NVIDIA_TF32_OVERRIDE=0
export CRITERION_HOME=/tmp/gpu-check-criterion
export RUST_BACKTRACE=1

say "gpu-check: $(date -u +%FT%TZ) on $(hostname), dry run: $dry"
say "  libcuda: ${cuda_lib:-none found}; NVRTC: ${nvrtc:-none found} (the machine's: ${system_nvrtc:-none});" \
  "cuBLAS: ${cublas:-none found}"
if command -v nvidia-smi >/dev/null; then
  say "  $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
fi
{
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "vm.overcommit_memory=$(cat /proc/sys/vm/overcommit_memory 2>&1)"
  grep -E '^(MemTotal|SwapTotal)' /proc/meminfo
  ls -l "$libdir"
  nvidia-smi 2>&1 | head -20
} >"$out/env.log" 2>&1

if [ "$dry" = 1 ]; then
  unset TVM_REQUIRE_CUDA TVM_REQUIRE_TOOLS
  require_cuda=() require_tools=()
else
  require_cuda=(TVM_REQUIRE_CUDA=1) require_tools=(TVM_REQUIRE_TOOLS=1)
fi

# run NAME SECONDS ENV... -- ARGS...: $here/NAME with a timeout, its output in $out/NAME.log.
run() {
  local name=$1 secs=$2 envs=()
  shift 2
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local t0=$(date +%s)
  env "${envs[@]}" timeout -k 5 "$secs" "$here/$name" "$@" >"$out/$name.log" 2>&1
  echo "$? $(( $(date +%s) - t0 ))" >"/tmp/gpu-check-rc.$name"
}

# The three test binaries at once (the GPU is shared safely; the CPU has 16 cores), then
# the bench alone.
run runtime_cuda 140 ${require_tools[@]+"${require_tools[@]}"} -- --nocapture &
run backends 140 ${require_cuda[@]+"${require_cuda[@]}"} -- --nocapture &
run device_tensors 140 -- --nocapture &
wait
run bench_cuda 150 -- --bench
# The peer: PyTorch (cuBLAS, its own kernels) on the same sizes, where the machine has it.
t0=$(date +%s)
if python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  timeout -k 5 120 python3 "$here/gpu_torch.py" >"$out/torch.log" 2>&1
  echo "$? $(( $(date +%s) - t0 ))" >/tmp/gpu-check-rc.torch
else
  echo "no torch with CUDA on this machine: the peer is not measured" >"$out/torch.log"
  echo "0 0" >/tmp/gpu-check-rc.torch
fi

failed=0
for name in runtime_cuda backends device_tensors bench_cuda torch; do
  read -r rc secs <"/tmp/gpu-check-rc.$name"
  case $rc in
    0) verdict=ok ;;
    124|137) verdict="TIMED OUT"; failed=1 ;;
    *) verdict="FAILED (exit $rc)"; failed=1 ;;
  esac
  log=$out/$name.log
  echo
  echo "==== $name: $verdict in ${secs}s; the end of $log:"
  tail -n 25 "$log"
  say "$name: $verdict in ${secs}s"
  grep -h '^test result:' "$log" | sed 's/^/    /' | tee -a "$summary"
  grep -h -E '^test .* FAILED$' "$log" | head -n 10 | sed 's/^/    /' | tee -a "$summary"
  # The first panics, with the line of their message.
  grep -h -A1 'panicked at' "$log" | grep -v '^--$' | head -n 6 | sed 's/^/    /' | tee -a "$summary"
  grep -h -E 'skipped|skipping|backend suite runs on|cuda bench:|^cuda summary:|^torch' "$log" | sort | uniq -c | sort -rn \
    | head -n 24 | sed 's/^/   /' | tee -a "$summary"
done
# On the GPU machine, what must have run on CUDA rather than been skipped.
if [ "$dry" != 1 ]; then
  need() {
    if ! grep -q -E "$2" "$out/$1.log"; then
      say "MISSING from $1: $3"
      failed=1
    fi
  }
  need backends 'backend suite runs on: .*cuda:0' "the backend suite on cuda:0"
  need runtime_cuda '^test child_on_a_cuda_device \.\.\. device: cuda:0' "tvm-runtime's kernels on cuda:0 (on_a_cuda_device_kernels_run_and_limits_hold)"
  need bench_cuda '^cuda summary: sgemm 4096³ f32: tvm-rs' "the sgemm measurement"
  need bench_cuda '^cuda summary: vector add 2\^26 f32: tvm-rs' "the vector add measurement"
fi
echo
echo "==== summary ($summary), $(( $(date +%s) - start ))s in all"
cat "$summary"
if [ "$failed" = 0 ]; then echo "gpu-check: all passed"; else echo "gpu-check: FAILURES above"; fi
exit "$failed"
RUN
chmod +x "$stage/run.sh"

echo
echo "== staged $stage: $(du -sh "$stage" | cut -f1) in all"
ls -l "$stage" "$stage"/nvrtc 2>/dev/null | grep -v '^total'
cat <<EOF

Here (no GPU):      bash $stage/run.sh --dry-run
On the GPU machine, one call of the device tool:
  run(command: "bash $stage/run.sh", carry: ["$stage"], timeout_s: 300)
EOF
