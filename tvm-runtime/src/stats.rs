//! [`DeviceStats`]: what the runtime did with device memory on the calling thread
//! (host↔device copies, allocations), so that a program or a test can see that a chain of
//! kernels on [`DeviceTensor`](crate::DeviceTensor)s made no host round trip.

use std::cell::Cell;
use std::ops::Sub;

/// Counts of device-memory work done by the calling thread since it started. Take the
/// difference of two readings ([`device_stats`]) around the code of interest.
///
/// Only real devices count: tensors on [`Device::Cpu`](crate::Device::Cpu) are never
/// copied to or from a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DeviceStats {
    /// Host → device copies (one per input tensor of a `run` on host tensors, one per
    /// `Tensor::to_device`).
    pub uploads: u64,
    /// Device → host copies (one per output of a `run` on host tensors, one per
    /// `DeviceTensor::to_host`).
    pub downloads: u64,
    /// Bytes of those uploads.
    pub bytes_uploaded: u64,
    /// Bytes of those downloads.
    pub bytes_downloaded: u64,
    /// Device buffers newly allocated from the driver.
    pub allocations: u64,
    /// Device buffers taken from the runtime's pool of freed buffers instead.
    pub pool_reuses: u64,
}

impl Sub for DeviceStats {
    type Output = DeviceStats;
    /// The counts between two readings (`later - earlier`; zero where `self` is not the
    /// later reading).
    fn sub(self, o: DeviceStats) -> DeviceStats {
        DeviceStats {
            uploads: self.uploads.saturating_sub(o.uploads),
            downloads: self.downloads.saturating_sub(o.downloads),
            bytes_uploaded: self.bytes_uploaded.saturating_sub(o.bytes_uploaded),
            bytes_downloaded: self.bytes_downloaded.saturating_sub(o.bytes_downloaded),
            allocations: self.allocations.saturating_sub(o.allocations),
            pool_reuses: self.pool_reuses.saturating_sub(o.pool_reuses),
        }
    }
}

thread_local! {
    static STATS: Cell<DeviceStats> = const { Cell::new(DeviceStats {
        uploads: 0, downloads: 0, bytes_uploaded: 0, bytes_downloaded: 0, allocations: 0, pool_reuses: 0,
    }) };
}

/// The calling thread's counts so far. Kernels run on the thread that calls them, so the
/// counts of a chain of calls are exactly the difference of two readings around it.
pub fn device_stats() -> DeviceStats {
    STATS.with(Cell::get)
}

/// Adds to the calling thread's counts.
pub(crate) fn count(f: impl FnOnce(&mut DeviceStats)) {
    STATS.with(|s| {
        let mut v = s.get();
        f(&mut v);
        s.set(v);
    })
}
