#!/usr/bin/env bash
# The examples' CPU kernels compiled by two revisions of the compiler, timed in one run:
# whether a change to the compiler changed their speed. A scratch crate per revision
# includes the same kernel files (examples/kernels/{layernorm,softmax,conv2d}.rs of the
# working tree) and times each with `NAME::profile` on the CPU; the two builds alternate,
# ROUNDS times per kernel, and the medians of each round are printed sorted.
#
#   bash benches/revisions.sh REV [ROUNDS]     (REV: the revision to compare with, e.g. main~5)
#
# The kernel files must parse under both revisions. Builds go to target/revisions/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rev="${1:?usage: revisions.sh REV [ROUNDS]}"
rounds="${2:-6}"
work="$root/target/revisions"
mkdir -p "$work"
old="$work/tree"
rm -rf "$old"
git -C "$root" worktree prune
git -C "$root" worktree add -q --detach "$old" "$rev"
trap 'git -C "$root" worktree remove --force "$old"' EXIT

# A crate depending on the compiler at $2 (its package name is read from its manifest:
# it was `tvm` before the crates.io names).
scratch() {
  local dir="$1" tree="$2"
  local pkg
  pkg=$(sed -n '/^\[package\]/,/^\[/{s/^name = "\(.*\)"/\1/p}' "$tree/Cargo.toml" | head -1)
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "revision-$(basename "$dir")"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
tvm = { package = "$pkg", path = "$tree", default-features = false }

[workspace]
EOF
  cat >"$dir/src/main.rs" <<EOF
#[path = "$root/examples/kernels/layernorm.rs"]
mod ln;
#[path = "$root/examples/kernels/softmax.rs"]
mod sm;
#[path = "$root/examples/kernels/conv2d.rs"]
mod cv;
use tvm::{Device, Tensor};

fn main() -> Result<(), tvm::Error> {
    let (m, n) = (4096usize, 1024usize);
    let x = Tensor::from_vec((0..m * n).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect(), [m, n])?;
    let p = match std::env::args().nth(1).unwrap_or_default().as_str() {
        "softmax" => sm::softmax::profile(&Device::Cpu, &x)?,
        "conv2d" => {
            let d = Tensor::from_vec((0..64 * 56 * 56).map(|i| (i % 13) as f32 / 13.0).collect(), [1, 64, 56, 56])?;
            let w = Tensor::from_vec((0..64 * 64 * 9).map(|i| (i % 7) as f32 / 7.0 - 0.5).collect(), [64, 64, 3, 3])?;
            cv::conv2d::profile(&Device::Cpu, &d, &w)?
        }
        _ => {
            let g = Tensor::from_vec(vec![1.0f32; n], [n])?;
            let b = Tensor::from_vec(vec![0.0f32; n], [n])?;
            ln::layernorm::profile(&Device::Cpu, &x, &g, &b)?
        }
    };
    println!("{p}");
    Ok(())
}
EOF
}
scratch "$work/new" "$root"
scratch "$work/old" "$old"
for d in new old; do
  (cd "$work/$d" && CARGO_TARGET_DIR="$work/target" cargo build -q --release)
done
echo "$(git -C "$root" log --oneline -1 | cut -c1-60) (new) against $(git -C "$old" log --oneline -1 | cut -c1-60) (old)"
for k in layernorm softmax conv2d; do
  for _ in $(seq "$rounds"); do
    for d in new old; do
      "$work/target/release/revision-$d" "$k" | awk -v k="$k" -v d="$d" '{ print k, d, $4, $5 }'
    done
  done
done | sort -k1,1 -k2,2 -k3,3n | awk '{ key = $1 " " $2; a[key] = a[key] " " $3 $4 } END { for (k in a) print k ":" a[k] }' | sort
