//! The device types of a backend built without its feature (`opencl_off.rs`,
//! `cuda_off.rs` re-export them): uninhabited, so nothing that needs a live device can be
//! reached at run time, and every method is an empty `match`.

use super::{KernelArg, KernelDesc, Program};
use crate::error::Error;
use std::convert::Infallible;
use std::sync::Arc;

pub(crate) struct DeviceState(pub(crate) Infallible);

impl DeviceState {
    pub(crate) fn index(&self) -> usize {
        match self.0 {}
    }
    pub(crate) fn load(&'static self, _program: &'static Program) -> Result<Arc<Module>, Error> {
        match self.0 {}
    }
    pub(crate) fn is_cached(&self, _program: &'static Program) -> bool {
        match self.0 {}
    }
    pub(crate) fn alloc(&'static self, _bytes: usize) -> Result<Buffer, Error> {
        match self.0 {}
    }
    pub(crate) fn launch(
        &self,
        _module: &Module,
        _index: usize,
        _k: &KernelDesc,
        _grid: [usize; 3],
        _block: [usize; 3],
        _args: &[KernelArg<'_>],
    ) -> Result<(), Error> {
        match self.0 {}
    }
}

pub(crate) struct Module(pub(crate) Infallible);

pub(crate) struct Buffer(pub(crate) Infallible);

impl Buffer {
    pub(crate) fn write(&mut self, _bytes: &[u8]) -> Result<(), Error> {
        match self.0 {}
    }
    pub(crate) fn read(&self, _out: &mut [u8]) -> Result<(), Error> {
        match self.0 {}
    }
    pub(crate) fn fill_zero(&mut self) -> Result<(), Error> {
        match self.0 {}
    }
}
