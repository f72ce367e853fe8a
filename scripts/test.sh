#!/usr/bin/env bash
# Installs what the tests need and runs them all. Safe to run again.
#
# Needs: the Rust toolchain (with rustfmt); for the OpenCL tests, Debian's pocl-opencl-icd
# (OpenCL on the CPU) and ocl-icd-opencl-dev (the ICD loader libOpenCL), installed here
# when missing and run as root. Nothing links against libOpenCL: the runtime loads it
# when first used, so everything builds without it and the OpenCL tests then skip.
# `TVM_REQUIRE_TOOLS=1` (set by CI) turns every test skip for a missing tool into a
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg -s pocl-opencl-icd ocl-icd-opencl-dev >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd ocl-icd-opencl-dev clinfo >/dev/null
  else
    echo "note: pocl-opencl-icd and ocl-icd-opencl-dev are missing (run as root to install them)" >&2
  fi
fi

# Every crate, every test, every feature (ndarray, compiler; opencl is a default).
cargo test --workspace --all-targets --all-features 2>&1
# DSL.md's programs once more, built with tvm's default features only (what a user's
# crate gets) and the default device set to OpenCL: the typed functions then run their
# GPU schedules on PoCL, libOpenCL loaded at run time.
# (grep reads all of clinfo's output: with -q it could exit first, and pipefail would count
# clinfo's SIGPIPE as "no device".)
if [ "${TVM_REQUIRE_TOOLS:-}" = 1 ] || { command -v clinfo >/dev/null && clinfo -l 2>/dev/null | grep Device >/dev/null; }; then
  TVM_DEVICE=opencl cargo test --test dsl_contract 2>&1
else
  echo "note: no OpenCL device, so DSL.md's programs are not rerun on OpenCL" >&2
fi
# The API docs must build without warnings.
RUSTDOCFLAGS="-D warnings" cargo doc -p tvm -p tvm-runtime -p tvm-core --no-deps --all-features 2>&1
