//! The OpenCL backend's interface when the `opencl` feature is off: no device exists, and
//! every question about one answers `DeviceUnavailable`. The types that stand for a live
//! device are uninhabited, so nothing here can be reached at run time.

pub use super::Caps;
use crate::error::Error;

/// The OpenCL runtime of a build without OpenCL: no device.
pub struct OpenClRuntime(());

impl OpenClRuntime {
    pub fn global() -> &'static OpenClRuntime {
        static RT: OpenClRuntime = OpenClRuntime(());
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

    pub(crate) fn state(&self, n: usize) -> Result<&'static DeviceState, Error> {
        Err(Error::DeviceUnavailable {
            device: format!("opencl:{n}"),
            reason: "tvm was built without its `opencl` feature".to_string(),
        })
    }

    pub fn synchronize(&self, n: usize) -> Result<(), Error> {
        self.state(n).map(|s| match s.0 {})
    }

    pub fn caps(&self, n: usize) -> Result<Caps, Error> {
        self.state(n).map(|s| match s.0 {})
    }

    pub fn build_uncached(&self, n: usize, _source: &str, _options: &str) -> Result<String, Error> {
        self.state(n).map(|s| match s.0 {})
    }
}

pub(crate) use super::off::{Buffer, DeviceState, Module};
