//! The WebGPU backend's interface when the `webgpu` feature is off: no device exists, and
//! every question about one answers `DeviceUnavailable`. The types that stand for a live
//! device are uninhabited, so nothing here can be reached at run time.

use crate::error::Error;

/// The WebGPU runtime of a build without WebGPU: no adapter.
pub struct WebGpuRuntime(());

impl WebGpuRuntime {
    pub fn global() -> &'static WebGpuRuntime {
        static RT: WebGpuRuntime = WebGpuRuntime(());
        &RT
    }

    pub fn device_count(&self) -> usize {
        0
    }

    pub fn device_name(&self, _n: usize) -> Option<String> {
        None
    }

    pub fn check_device(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|_| ())
    }

    pub fn synchronize(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|s| match s.0 {})
    }

    pub fn has_timestamps(&self, n: usize) -> Result<bool, Error> {
        self.state(n).map(|s| match s.0 {})
    }

    pub(crate) fn state(&self, n: usize) -> Result<&'static DeviceState, Error> {
        Err(Error::DeviceUnavailable {
            device: format!("webgpu:{n}"),
            reason: "tvm was built without its `webgpu` feature".to_string(),
        })
    }
}

pub(crate) use super::off::{Buffer, DeviceState, Module};
