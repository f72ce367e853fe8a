//! The debugging hook the pipeline calls between passes: `TVM_DUMP_TIR=DIR` writes the
//! printed TIR after each pass to `DIR`. It does not change the TIR. (Pass times are
//! reported through `lower::lower_traced`; see `expand` for `TVM_TIME_PASSES`.)

use crate::tir::printer::print_func;
use crate::tir::PrimFunc;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a dump failed, so a broken `TVM_DUMP_TIR` is reported once per process.
static DUMP_FAILED: AtomicBool = AtomicBool::new(false);

/// When `TVM_DUMP_TIR=DIR` is set, writes `print_func(f)` to
/// `DIR/{func_name}_{target_kind}_{index:02}_{pass}.tir`, creating `DIR` if needed.
/// A failure to write is reported to stderr once and otherwise ignored: dumping must
/// never stop a compilation.
pub fn dump(f: &PrimFunc, index: usize, pass: &str) {
    let Some(dir) = std::env::var_os("TVM_DUMP_TIR").filter(|d| !d.is_empty()) else { return };
    let dir = PathBuf::from(dir);
    let file = dir.join(format!("{}_{}_{index:02}_{}.tir", file_part(&f.name), f.target.kind.name(), file_part(pass)));
    let result = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, print_func(f)));
    if let Err(e) = result {
        if !DUMP_FAILED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "tvm: TVM_DUMP_TIR: cannot write `{}`: {e} (further dump errors are not reported)",
                file.display()
            );
        }
    }
}

/// `name` with every character a file name should not hold replaced by `_`.
fn file_part(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}
