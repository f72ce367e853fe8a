//! The kernels of a crate of their own are right, and a build with `tvm`'s GPU features
//! off has no GPU code: `compute!` lowered them for the CPU only.

use tvm::{Device, Error, Tensor};
use tvm_example_kernels::{layernorm, matmul, softmax, vector_add};

#[path = "../../../../tvm-core/tests/support/reference.rs"]
mod reference;

#[test]
fn kernels_match_the_references() -> Result<(), Error> {
    let n = 1024;
    let (a, b) = (reference::rand_vec(n * n, 1), reference::rand_vec(n * n, 2));
    let c = matmul(&Tensor::from_vec(a.clone(), [n, n])?, &Tensor::from_vec(b.clone(), [n, n])?)?;
    reference::assert_close(c.as_slice(), &reference::matmul(&a, &b, n, n, n), reference::rtol_for_sum(n), "matmul");
    let (x, g, be) = (reference::rand_vec(64 * 300, 3), reference::rand_vec(300, 4), reference::rand_vec(300, 5));
    let y = softmax(&Tensor::from_vec(x.clone(), [64, 300])?)?;
    reference::assert_close(y.as_slice(), &reference::softmax(&x, 64, 300), 1e-5, "softmax");
    let y = layernorm(
        &Tensor::from_vec(x.clone(), [64, 300])?,
        &Tensor::from_vec(g.clone(), [300])?,
        &Tensor::from_vec(be.clone(), [300])?,
    )?;
    reference::assert_close(y.as_slice(), &reference::layernorm(&x, &g, &be, 64, 300), 1e-4, "layernorm");
    let v = vector_add(&Tensor::from_vec(g.clone(), [300])?, &Tensor::from_vec(be.clone(), [300])?)?;
    reference::assert_close(v.as_slice(), &reference::vector_add(&g, &be), 0.0, "vector_add");
    Ok(())
}

/// With the CUDA backend off (`tvm::CUDA_BACKEND`: this crate asks for no GPU feature, so
/// it is off unless another crate of the same build turns it on), the kernels have no
/// GPU code at all; with it on, they have both.
#[test]
fn gpu_code_follows_the_features() {
    let on = tvm::CUDA_BACKEND;
    for target in ["cuda", "opencl"] {
        assert_eq!(vector_add::source(target).is_ok(), on, "source({target:?})");
        assert_eq!(matmul::lowered(target).is_ok(), on, "lowered({target:?})");
    }
    assert!(vector_add::source("cpu").is_ok() && vector_add::lowered("cpu").is_ok());
    if on {
        println!("note: the GPU features are on in this build (unified with another crate's); the off case runs under `cargo test -p tvm-example-kernels`");
        return;
    }
    assert!(matches!(vector_add::source("cuda"), Err(Error::UnsupportedTarget { target }) if target == "cuda"));
    let a = Tensor::from_vec(vec![1.0f32; 8], [8]).unwrap();
    let mut c = Tensor::zeros([8]);
    for (device, feature) in [(Device::Cuda(0), "cuda"), (Device::OpenCl(0), "opencl")] {
        let e = vector_add::run(&device, &a, &a, &mut c).unwrap_err();
        assert!(
            matches!(&e, Error::DeviceUnavailable { reason, .. } if reason.contains(&format!("feature `{feature}` is off"))),
            "{e:?}"
        );
    }
    // The typed function runs on the CPU.
    assert_eq!(vector_add(&a, &a).unwrap().as_slice(), &[2.0; 8]);
}
