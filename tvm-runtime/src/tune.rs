//! What the generated code needs of tuning records: which device it runs on, as a
//! record names it, and whether a record's winner applies to a call.
//!
//! A kernel with a tuning record has its winner compiled next to the schedule as
//! written; a call runs the winner when `TVM_TUNING` is not `off`, the device is the
//! one the record was measured on ([`device_identity`]) and the dims are the ones it was
//! measured with.

use crate::Device;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The device as a tuning record names it: `cpu ARCH FEATURES` (the SIMD features the
/// CPU has, `+`-joined), `opencl PLATFORM: NAME`, `cuda NAME sm_XY`; `None` for a GPU
/// that is not there.
pub fn device_identity(device: &Device) -> Option<String> {
    static CACHE: OnceLock<Mutex<HashMap<Device, Option<String>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(device).cloned()) {
        return v;
    }
    let v = match *device {
        Device::Cpu => Some(cpu_identity()),
        Device::OpenCl(n) => crate::gpu::opencl::OpenClRuntime::global().device_name(n).map(|d| format!("opencl {d}")),
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

/// Whether records apply at all: not when `TVM_TUNING=off` (read once).
pub fn tuning_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("TVM_TUNING").map(|v| v.trim() != "off").unwrap_or(true))
}

/// Whether a call on `device` with dims `dims` runs the winner of a record measured on
/// `want_device` with `want_dims` (each the index of a dim in `dims` and its value).
pub fn tuned_applies(device: &Device, want_device: &str, want_dims: &[(usize, i64)], dims: &[i64]) -> bool {
    tuning_enabled()
        && want_dims.iter().all(|&(k, v)| dims.get(k) == Some(&v))
        && device_identity(device).as_deref() == Some(want_device)
}
