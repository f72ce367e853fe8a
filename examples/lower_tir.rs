//! Prints the tensor expressions of a matmul and the TIR it lowers to: once for the
//! CPU schedule (tiling, a local accumulator, vectorization, parallel rows) and once for
//! the CUDA schedule (blocks and threads, shared-memory tiles, barriers).
//!
//! Run: `cargo run --features compiler --example lower_tir` (the compiler is a library
//! of the facade behind its `compiler` feature; kernels built with `compute!` do not need it)

const MATMUL: &str = include_str!("../tvm-core/tests/corpus/matmul_tiled.rs");

fn main() {
    let kernel = match tvm::compiler::frontend::parse_str(MATMUL) {
        Ok(k) => k,
        Err(errors) => {
            for e in errors {
                eprintln!("error: {e}");
            }
            std::process::exit(1);
        }
    };
    println!("== tensor expressions\n{}", tvm::compiler::te::print_graph(&kernel.graph));
    for target in ["cpu", "cuda"] {
        let target = tvm::compiler::Target::parse(target).expect("a known target");
        let lowered =
            tvm::compiler::driver::build_schedule(&kernel, &target).and_then(|s| tvm::compiler::driver::lower(&s));
        match lowered {
            Ok(f) => println!("== lowered for `{target}`\n{}", tvm::compiler::tir::printer::print_func(&f)),
            Err(errors) => {
                for e in errors {
                    eprintln!("error: {e}");
                }
                std::process::exit(1);
            }
        }
    }
}
