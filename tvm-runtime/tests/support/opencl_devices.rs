//! Which OpenCL devices the tests run on: every usable one. The one rule every test
//! suite that needs OpenCL follows (this file is included by path where needed): with no
//! device, a test is skipped with a printed reason, except under `TVM_REQUIRE_TOOLS=1`
//! (CI), where OpenCL (PoCL) must be there and its absence fails the test.
#![allow(dead_code)]

use std::sync::OnceLock;
use tvm_runtime::gpu::opencl::OpenClRuntime;

/// Every usable OpenCL device. With none, prints why once, or panics under
/// `TVM_REQUIRE_TOOLS=1`.
pub fn devices() -> std::ops::Range<usize> {
    static N: OnceLock<usize> = OnceLock::new();
    0..*N.get_or_init(|| {
        let rt = OpenClRuntime::global();
        match rt.check_device(0) {
            Ok(()) => rt.device_count(),
            Err(e) if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") => {
                panic!("TVM_REQUIRE_TOOLS=1 but no usable OpenCL device: {e}")
            }
            Err(e) => {
                eprintln!("the OpenCL tests are skipped: {e}");
                0
            }
        }
    })
}

/// Whether an OpenCL device exists, for a test that needs one: prints that `test` is
/// skipped when there is none, or panics under `TVM_REQUIRE_TOOLS=1` (see [`devices`]).
pub fn device_or_skip(test: &str) -> bool {
    let found = !devices().is_empty();
    if !found {
        eprintln!("skipping {test}: no usable OpenCL device");
    }
    found
}
