//! What the generated code needs of tuning records: which device it runs on, as a
//! record names it, and whether a record's winner applies to a call.
//!
//! A kernel with a tuning record has its winner compiled next to the schedule as
//! written; a call runs the winner when `TVM_TUNING` is not `off`, the device is the
//! one the record was measured on ([`device_identity`]) and the dims are the ones it was
//! measured with.

use crate::Device;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

/// The device as a tuning record names it: `cpu ARCH FEATURES` (the SIMD features the
/// CPU has, `+`-joined), `opencl PLATFORM: NAME`, `cuda NAME sm_XY`; `None` for a GPU
/// that is not there.
pub fn device_identity(device: &Device) -> Option<String> {
    let cache = cache();
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(device).cloned()) {
        return v;
    }
    let v = match *device {
        Device::Cpu => Some(cpu_identity()),
        Device::OpenCl(n) => crate::gpu::opencl::OpenClRuntime::global().device_name(n).map(|d| format!("opencl {d}")),
        Device::WebGpu(n) => crate::gpu::webgpu::WebGpuRuntime::global().device_name(n).map(|d| format!("webgpu {d}")),
        Device::Cuda(n) => {
            let rt = crate::gpu::cuda::CudaRuntime::global();
            match (rt.device_name(n), rt.caps(n)) {
                (Some(name), Ok(caps)) => Some(format!("cuda {name} sm_{}", caps.compute_capability)),
                _ => None,
            }
        }
    };
    if let Ok(mut c) = cache.lock() {
        c.insert(*device, v.clone());
    }
    v
}

/// Each device's identity, found once.
fn cache() -> &'static Mutex<HashMap<Device, Option<String>>> {
    static CACHE: OnceLock<Mutex<HashMap<Device, Option<String>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// `cpu ARCH FEATURES`: the features that decide which vector code is fast.
fn cpu_identity() -> String {
    #[allow(unused_mut)]
    let mut features: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        for (name, on) in [
            ("sse4.2", std::arch::is_x86_feature_detected!("sse4.2")),
            ("avx", std::arch::is_x86_feature_detected!("avx")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
        ] {
            if on {
                features.push(name);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            features.push("neon");
        }
    }
    format!("cpu {} {}", std::env::consts::ARCH, features.join("+"))
}

/// 0: not decided yet; 1: on; 2: off.
static TUNING: AtomicU8 = AtomicU8::new(0);

/// Whether kernels run the winners of their tuning records where those apply: yes,
/// unless the environment has `TVM_TUNING=off` (read at the first call) or
/// [`set_tuning_enabled`] said otherwise.
pub fn tuning_enabled() -> bool {
    match TUNING.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let on = std::env::var("TVM_TUNING").map(|v| v.trim() != "off").unwrap_or(true);
            // A concurrent `set_tuning_enabled` wins over the environment.
            let _ = TUNING.compare_exchange(0, if on { 1 } else { 2 }, Ordering::Relaxed, Ordering::Relaxed);
            TUNING.load(Ordering::Relaxed) == 1
        }
    }
}

/// Makes every kernel of the process run its tuned winners (`true`) or its schedules as
/// written (`false`) from now on, whatever `TVM_TUNING` says: to compare the two in one
/// program.
pub fn set_tuning_enabled(on: bool) {
    TUNING.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Whether a call on `device` with dims `dims` runs the winner of a record measured on
/// `want_device` with `want_dims` (each the index of a dim in `dims` and its value).
pub fn tuned_applies(device: &Device, want_device: &str, want_dims: &[(usize, i64)], dims: &[i64]) -> bool {
    tuning_enabled() && want_dims.iter().all(|&(k, v)| dims.get(k) == Some(&v)) && identity_is(device, want_device)
}

/// Whether `device`'s identity is `want`: compared in the cache, without a copy (every
/// call of a kernel with a record asks).
fn identity_is(device: &Device, want: &str) -> bool {
    if let Some(hit) = cache().lock().ok().and_then(|c| c.get(device).map(|v| v.as_deref() == Some(want))) {
        return hit;
    }
    device_identity(device).as_deref() == Some(want)
}
