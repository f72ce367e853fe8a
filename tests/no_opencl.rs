//! OpenCL is loaded at run time: a program built with the default features (the OpenCL
//! backend on) runs where OpenCL is missing, on the CPU, and says why OpenCL is not there:
//! `Device::OpenCl(n)` is `Err(DeviceUnavailable)`, `Device::default()` is the CPU,
//! never a link error, never a panic.
//!
//! Each case reruns this test binary as a child in the situation: without libOpenCL (in a
//! private mount namespace where the library is replaced by an empty file; needs
//! `unshare`, so root, as in CI), and without any OpenCL platform (the ICD loader pointed
//! at an empty vendor directory). Under `TVM_REQUIRE_TOOLS=1` neither may be skipped.

use std::path::PathBuf;
use std::process::Command;
use tvm::{compute, Device, Error, Tensor};

compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }
}

/// Set in a child: what the OpenCL runtime must say is missing.
const CHILD: &str = "TVM_TEST_NO_OPENCL_EXPECT";

/// In the child: OpenCL is unavailable for `reason`, and everything else works.
fn checks(reason: &str) {
    let e = Device::OpenCl(0).check_available().unwrap_err();
    assert!(
        matches!(&e, Error::DeviceUnavailable { device, reason: r } if device == "opencl:0" && r.contains(reason)),
        "{e:?}"
    );
    // The CPU, and in a build with the `webgpu` feature any WebGPU adapter: no OpenCL.
    let all = Device::all();
    assert!(all[0] == Device::Cpu && all[1..].iter().all(|d| matches!(d, Device::WebGpu(_))), "{all:?}");
    assert_eq!(Device::try_default(), Ok(Device::Cpu));
    assert_eq!(Device::default(), Device::Cpu);
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3]).unwrap();
    let b = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], [3]).unwrap();
    assert_eq!(vector_add(&a, &b).unwrap().as_slice(), &[11.0, 22.0, 33.0]);
    let mut c = Tensor::zeros([3]);
    let e = vector_add::run(&Device::OpenCl(0), &a, &b, &mut c).unwrap_err();
    assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e:?}");
    let e = a.to_device(&Device::OpenCl(0)).unwrap_err();
    assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e:?}");
    println!("checked: opencl unavailable ({reason})");
}

fn skip_or_fail(test: &str, why: String) {
    if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{test}: TVM_REQUIRE_TOOLS=1 but {why}");
    }
    eprintln!("skipping {test}: {why}");
}

/// Runs test `test` of this binary as a child through `command`, with `CHILD` set to
/// `reason`; the child must pass, having run the checks.
fn run_child(test: &str, mut command: Command, reason: &str) {
    command.args(["--exact", test, "--nocapture", "--test-threads=1"]).env(CHILD, reason).env_remove("TVM_DEVICE");
    let out = command.output().expect("the child runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test}: the child failed\n{stdout}\n{stderr}");
    assert!(stdout.contains("checked: opencl unavailable") && stdout.contains("1 passed"), "{stdout}\n{stderr}");
}

/// The ICD loader's library as the dynamic linker finds it (`libOpenCL.so.1`), resolved.
fn libopencl() -> Option<PathBuf> {
    let out = Command::new("ldconfig").arg("-p").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.trim_start().starts_with("libOpenCL.so.1 ") && l.contains("x86-64"))?;
    let path = line.rsplit("=> ").next()?.trim();
    std::fs::canonicalize(path).ok()
}

#[test]
fn without_libopencl_kernels_run_on_the_cpu() {
    const TEST: &str = "without_libopencl_kernels_run_on_the_cpu";
    if let Ok(reason) = std::env::var(CHILD) {
        return checks(&reason);
    }
    let reason = "the OpenCL library (libOpenCL.so.1) could not be loaded";
    let Some(lib) = libopencl() else {
        // No libOpenCL on this machine: this process is the case itself.
        return checks(reason);
    };
    let probe = Command::new("unshare").args(["-m", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        return skip_or_fail(TEST, "`unshare -m` does not work here (it needs root)".to_string());
    }
    // In a mount namespace of its own, the library is an empty file: `dlopen` fails.
    // `$0` is the library, `"$@"` the test binary and its arguments.
    let mut c = Command::new("unshare");
    c.args(["-m", "sh", "-c", r#"mount --bind /dev/null "$0" && exec "$@""#])
        .arg(&lib)
        .arg(std::env::current_exe().unwrap());
    run_child(TEST, c, reason);
}

#[test]
fn without_an_opencl_platform_kernels_run_on_the_cpu() {
    const TEST: &str = "without_an_opencl_platform_kernels_run_on_the_cpu";
    if let Ok(reason) = std::env::var(CHILD) {
        return checks(&reason);
    }
    if libopencl().is_none() {
        return skip_or_fail(TEST, "there is no libOpenCL (the case without a library covers it)".to_string());
    }
    // The ICD loader looks for platforms in an empty directory.
    let empty = std::env::temp_dir().join(format!("tvm-no-opencl-vendors-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.env("OCL_ICD_VENDORS", &empty);
    run_child(TEST, c, "no OpenCL platform found");
    let _ = std::fs::remove_dir(&empty);
}
