//! Every code block of docs/LANGUAGE.md, compiled and run as written (the `main` of §1 is a test
//! here), plus the §4 API of the generated module.

use tvm::{compute, Tensor};

compute! {
    /// c[i] = a[i] + b[i]
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 256);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
    }

    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        c.parallel(o);
        c.vectorize(v);
    }
}

fn section_1_main() -> Result<(), tvm::Error> {
    let a = Tensor::from_vec(vec![1.0f32; 1000], [1000])?;
    let b = Tensor::from_vec(vec![2.0f32; 1000], [1000])?;
    let c = vector_add(&a, &b)?; // runs on tvm::Device::default()
    assert_eq!(c.shape(), [1000]);
    assert!(c.as_slice().iter().all(|&x| x == 3.0));
    Ok(())
}

#[test]
fn section_1_first_kernel() {
    section_1_main().unwrap();
}

compute! {
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }
}

compute! {
    /// out = relu(x · wᵀ + bias): the epilogue is fused by the default schedules
    pub fn dense_bias_relu(x: f32[M, K], w: f32[N, K], bias: f32[N]) -> out: f32[M, N] {
        let d[i, j]: f32[M, N] = sum(x[i, k] * w[j, k] for k in 0..K);
        out[i, j] = max(d[i, j] + bias[j], 0.0);
    }
}

compute! {
    pub fn softmax(x: f32[M, N]) -> y: f32[M, N] {
        let m[i]: f32[M] = max(x[i, j] for j in 0..N);
        let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
        let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
        y[i, j] = e[i, j] / s[i];
    }
}

compute! {
    pub fn scale(x: f32[n], alpha: f32) -> y: f32[n] {
        y[i] = alpha * x[i];
    }
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "got {g}, want {w}");
    }
}

#[test]
fn section_2_operators() -> Result<(), tvm::Error> {
    let (m, k, n) = (7, 13, 5);
    let a = Tensor::from_vec(values(m * k, 1), [m, k])?;
    let b = Tensor::from_vec(values(k * n, 2), [k, n])?;
    let c = matmul(&a, &b)?;
    let mut want = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|p| a.as_slice()[i * k + p] * b.as_slice()[p * n + j]).sum();
        }
    }
    close(c.as_slice(), &want);

    let w = Tensor::from_vec(values(n * k, 3), [n, k])?;
    let bias = Tensor::from_vec(values(n, 4), [n])?;
    let out = dense_bias_relu(&a, &w, &bias)?;
    for i in 0..m {
        for j in 0..n {
            let d: f32 = (0..k).map(|p| a.as_slice()[i * k + p] * w.as_slice()[j * k + p]).sum();
            want[i * n + j] = (d + bias.as_slice()[j]).max(0.0);
        }
    }
    close(out.as_slice(), &want);

    let y = softmax(&a)?;
    for i in 0..m {
        let row = &a.as_slice()[i * k..(i + 1) * k];
        let mx = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let s: f32 = row.iter().map(|v| (v - mx).exp()).sum();
        for j in 0..k {
            assert!((y.as_slice()[i * k + j] - (row[j] - mx).exp() / s).abs() < 1e-6);
        }
    }

    let x = Tensor::from_vec(values(10, 5), [10])?;
    let y = scale(&x, 2.5)?;
    close(y.as_slice(), &x.as_slice().iter().map(|v| 2.5 * v).collect::<Vec<_>>());
    Ok(())
}

#[test]
fn section_4_generated_module() -> Result<(), tvm::Error> {
    let a = Tensor::from_vec(values(64, 6), [8, 8])?;
    let b = Tensor::from_vec(values(64, 7), [8, 8])?;
    let mut c = Tensor::<f32, 2>::zeros([8, 8]);
    matmul::run(&tvm::Device::Cpu, &a, &b, &mut c)?;
    close(c.as_slice(), matmul(&a, &b)?.as_slice());
    for target in ["cpu", "cuda", "opencl"] {
        assert!(matmul::lowered(target)?.contains("for"), "{target}");
    }
    assert!(matmul::source("cpu")?.contains("fn"));
    assert!(matches!(matmul::source("vulkan"), Err(tvm::Error::UnsupportedTarget { .. })));
    assert!(matches!(matmul::lowered("vulkan"), Err(tvm::Error::UnsupportedTarget { .. })));
    // Shapes are checked at call time: the error names the parameter, the dim and both sizes.
    let bad = Tensor::from_vec(values(9 * 8, 8), [9, 8])?;
    let err = matmul(&a, &bad).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("`b`") && msg.contains("dimension 0") && msg.contains('9') && msg.contains('8'), "{msg}");
    // A wrongly shaped output is an error too, and it is left untouched.
    let mut small = Tensor::<f32, 2>::zeros([8, 7]);
    assert!(matches!(matmul::run(&tvm::Device::Cpu, &a, &b, &mut small), Err(tvm::Error::ShapeMismatch { .. })));
    // A zero-sized dimension is valid input.
    let e = Tensor::from_vec(vec![], [0, 8])?;
    assert_eq!(matmul(&e, &b)?.shape(), [0, 8]);
    Ok(())
}

#[test]
fn generated_functions_are_called_from_many_threads() {
    let a = Tensor::from_vec(values(4096, 9), [4096]).unwrap();
    let b = Tensor::from_vec(values(4096, 10), [4096]).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut c = Tensor::<f32, 1>::zeros([4096]);
                vector_add::run(&tvm::Device::Cpu, &a, &b, &mut c).unwrap();
                assert!(c.as_slice().iter().zip(a.as_slice().iter().zip(b.as_slice())).all(|(c, (a, b))| *c == a + b));
            });
        }
    });
}

/// `scripts/test.sh` reruns this file with `TVM_DEVICE` set (`opencl`): the typed
/// functions above then run on that device, the one `TVM_DEVICE` names, not on the CPU.
/// (Without `TVM_DEVICE` there is nothing to check here: §1 runs on the default device.)
#[test]
fn typed_functions_run_on_tvm_device() -> Result<(), tvm::Error> {
    let Some(text) = std::env::var("TVM_DEVICE").ok().filter(|t| !t.trim().is_empty()) else {
        return Ok(());
    };
    let requested: tvm::Device = text.parse()?;
    // The decision every typed function makes (`vector_add(&a, &b)` above).
    assert_eq!(tvm::Device::try_default()?, requested, "TVM_DEVICE={text}");
    // It is usable, so the typed calls of the other tests ran there; and they agree with
    // `run` on it.
    requested.check_available()?;
    let a = Tensor::from_vec(values(1000, 11), [1000])?;
    let b = Tensor::from_vec(values(1000, 12), [1000])?;
    let mut c = Tensor::<f32, 1>::zeros([1000]);
    vector_add::run(&requested, &a, &b, &mut c)?;
    assert_eq!(vector_add(&a, &b)?.as_slice(), c.as_slice());
    Ok(())
}

/// The language reference in the repository (`docs/LANGUAGE.md`, the rustdoc of
/// `compute!`) keeps the contract's every program and table row. The contract lives next
/// to the repository when it is checked out in its workspace; a lone clone has only the
/// reference, whose programs are doc tests of `tvm`.
#[test]
fn the_reference_keeps_the_contract() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = std::fs::read_to_string(root.join("docs/LANGUAGE.md")).unwrap();
    let Ok(contract) = std::fs::read_to_string(root.join("../shared/DSL.md")) else {
        println!("note: no ../shared/DSL.md next to the repository; the reference's programs are checked as doc tests");
        return;
    };
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let reference_flat = squash(&reference);
    let mut blocks = 0;
    for (n, block) in contract.split("```").enumerate().filter(|(n, _)| n % 2 == 1) {
        // A code block: its info string, then its text, which the reference must hold.
        let body = block.split_once('\n').map_or("", |(_, b)| b);
        assert!(
            reference_flat.contains(&squash(body)),
            "docs/LANGUAGE.md lacks the contract's code block #{}:\n{body}",
            n / 2 + 1
        );
        blocks += 1;
    }
    for row in contract.lines().filter(|l| l.starts_with('|') && !l.starts_with("|---")) {
        assert!(reference.contains(row), "docs/LANGUAGE.md lacks the contract's table row:\n{row}");
    }
    assert!(blocks >= 4, "the contract has {blocks} code blocks");
}
