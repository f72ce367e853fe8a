#!/usr/bin/env bash
# Installs what the tests need and runs them all. Safe to run again.
#
# Needs: the Rust toolchain; for the OpenCL tests, Debian's pocl-opencl-icd (OpenCL on the
# CPU) and ocl-icd-opencl-dev (libOpenCL), installed here when missing and run as root.
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

# Every feature (ndarray, opencl) when libOpenCL is there to link against.
# (grep reads all of ldconfig's output: with -q it could exit first, and pipefail would
# count ldconfig's SIGPIPE as "no libOpenCL".)
if ldconfig -p 2>/dev/null | grep 'libOpenCL\.so\b' >/dev/null; then
  features=(--all-features)
else
  if [ "${TVM_REQUIRE_TOOLS:-}" = 1 ]; then
    echo "error: libOpenCL is missing and TVM_REQUIRE_TOOLS=1" >&2
    exit 1
  fi
  features=(--features ndarray)
fi

cargo test --workspace --all-targets "${features[@]}" 2>&1
# DSL.md's programs once more with the default device set to OpenCL: the typed functions
# then run their GPU schedules on PoCL.
if [ "${features[0]}" = --all-features ]; then
  TVM_DEVICE=opencl cargo test --all-features --test dsl_contract 2>&1
fi
# The API docs of the compiler must build without warnings.
RUSTDOCFLAGS="-D warnings" cargo doc -p tvm-core --no-deps 2>&1
