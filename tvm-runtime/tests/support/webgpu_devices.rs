//! Which WebGPU adapters the tests run on: every usable one, in a build with the `webgpu`
//! feature (of the crate that includes this file by path). With none, a test is skipped
//! with a printed reason, except under `TVM_REQUIRE_TOOLS=1` (CI), where an adapter
//! (Mesa's lavapipe) must be there and its absence fails the test.
#![allow(dead_code)]

use std::sync::OnceLock;
use tvm_runtime::gpu::webgpu::WebGpuRuntime;

/// Every usable WebGPU adapter (none without the `webgpu` feature). With none, prints why
/// once, or panics under `TVM_REQUIRE_TOOLS=1`.
pub fn devices() -> std::ops::Range<usize> {
    static N: OnceLock<usize> = OnceLock::new();
    0..*N.get_or_init(|| {
        if !cfg!(feature = "webgpu") {
            return 0;
        }
        let rt = WebGpuRuntime::global();
        match rt.check_device(0) {
            Ok(()) => rt.device_count(),
            Err(e) if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") => {
                panic!("TVM_REQUIRE_TOOLS=1 but no usable WebGPU adapter: {e}")
            }
            Err(e) => {
                eprintln!("the WebGPU tests are skipped: {e}");
                0
            }
        }
    })
}
