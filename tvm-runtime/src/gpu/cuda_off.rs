//! The CUDA backend's interface when the `cuda` feature is off: no device exists, every
//! question about one answers `DeviceUnavailable`, and nothing compiles CUDA code. The
//! types that stand for a live device are uninhabited, so nothing here can be reached at
//! run time.

use super::{BinaryFormat, CompiledCuda, CudaCaps};
use crate::error::Error;
use std::path::Path;

const WHY: &str = "tvm was built without its `cuda` feature";

/// The CUDA runtime of a build without CUDA: no device.
pub struct CudaRuntime(());

impl CudaRuntime {
    pub fn global() -> &'static CudaRuntime {
        static RT: CudaRuntime = CudaRuntime(());
        &RT
    }

    pub fn device_count(&self) -> usize {
        0
    }

    pub fn driver_version(&self) -> Option<(u32, u32)> {
        None
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

    pub fn caps(&self, n: usize) -> Result<CudaCaps, Error> {
        self.state(n).map(|s| match s.0 {})
    }

    pub(crate) fn state(&self, n: usize) -> Result<&'static DeviceState, Error> {
        Err(Error::DeviceUnavailable { device: format!("cuda:{n}"), reason: WHY.to_string() })
    }
}

fn no_compiler() -> Error {
    Error::CompilationFailed { target: "cuda".to_string(), log: WHY.to_string() }
}

pub fn compile_cuda(_source: &str, _arch: u32) -> Result<CompiledCuda, Error> {
    Err(no_compiler())
}

#[doc(hidden)]
pub fn compile_cuda_with(
    _source: &str,
    _arch: u32,
    _format: BinaryFormat,
    _cache: Option<&Path>,
) -> Result<CompiledCuda, Error> {
    Err(no_compiler())
}

pub fn nvrtc_version() -> Result<(i32, i32), Error> {
    Err(no_compiler())
}

pub(crate) use super::off::{Buffer, DeviceState, Module};

impl Module {
    pub(crate) fn origin(&self) -> &str {
        match self.0 {}
    }
}
