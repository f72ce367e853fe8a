//! `TVM_DUMP_TIR`. In a test binary of its own, because it sets environment variables.
//! (`TVM_TIME_PASSES` prints through the pass tracer: `explorer_hooks.rs`.)

use tvm_core::dtype::DType;
use tvm_core::passes::dump::dump;
use tvm_core::target::Target;
use tvm_core::tir::printer::print_func;
use tvm_core::tir::*;

fn tiny() -> PrimFunc {
    let c = Buffer::new("c", DType::F32, Scope::Global);
    PrimFunc {
        name: "fill".into(),
        target: Target::cuda(),
        params: vec![Param::Tensor { buffer: c.clone(), shape: vec![Expr::int(1)], is_output: true }],
        body: Stmt::store(&c, vec![Expr::int(0)], Expr::float(1.0, DType::F32)),
        kernels: vec![],
        checks: vec![],
    }
}

#[test]
fn dump_writes_one_file_per_pass() {
    let dir = std::env::temp_dir().join(format!("tvm_dump_test_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let f = tiny();

    // Unset: nothing is written.
    std::env::remove_var("TVM_DUMP_TIR");
    dump(&f, 0, "schedule_ops");
    assert!(!dir.exists());

    std::env::set_var("TVM_DUMP_TIR", &dir);
    dump(&f, 3, "flatten_storage");
    let text = std::fs::read_to_string(dir.join("fill_cuda_03_flatten_storage.tir")).expect("the dump is written");
    assert_eq!(text, print_func(&f));
    std::env::remove_var("TVM_DUMP_TIR");
    std::fs::remove_dir_all(&dir).unwrap();

    // An unwritable directory is reported, not fatal.
    let file = std::env::temp_dir().join(format!("tvm_dump_test_file_{}", std::process::id()));
    std::fs::write(&file, "").unwrap();
    std::env::set_var("TVM_DUMP_TIR", file.join("sub"));
    dump(&f, 4, "simplify");
    dump(&f, 5, "simplify");
    std::env::remove_var("TVM_DUMP_TIR");
    std::fs::remove_file(&file).unwrap();
}
