//! `Device`: parsing and display of every form, and the default-device decision
//! (ARCHITECTURE.md, "Dispatch without surprises") as the pure `decide_default`.

use std::collections::HashSet;
use tvm_runtime::{decide_default, Device, Error};

#[test]
fn display_and_parse_round_trip() {
    for d in [Device::Cpu, Device::Cuda(0), Device::Cuda(1), Device::Cuda(17), Device::OpenCl(0), Device::OpenCl(2)] {
        assert_eq!(d.to_string().parse::<Device>().unwrap(), d);
    }
    assert_eq!(Device::Cpu.to_string(), "cpu");
    assert_eq!(Device::Cuda(0).to_string(), "cuda:0");
    assert_eq!(Device::OpenCl(1).to_string(), "opencl:1");
}

#[test]
fn parse_accepts_every_documented_form() {
    let cases = [
        ("cpu", Device::Cpu),
        ("cuda", Device::Cuda(0)),
        ("cuda:0", Device::Cuda(0)),
        ("cuda:1", Device::Cuda(1)),
        ("opencl", Device::OpenCl(0)),
        ("opencl:2", Device::OpenCl(2)),
        ("CPU", Device::Cpu),
        ("Cuda:3", Device::Cuda(3)),
        ("OpenCL", Device::OpenCl(0)),
        ("  cuda:1\n", Device::Cuda(1)),
        ("\tcpu ", Device::Cpu),
        ("cuda:007", Device::Cuda(7)),
    ];
    for (text, want) in cases {
        assert_eq!(text.parse::<Device>(), Ok(want), "{text:?}");
    }
}

#[test]
fn bad_strings_are_invalid_device() {
    for text in [
        "",
        " ",
        "gpu",
        "tpu",
        "cuda:",
        "cuda:-1",
        "cuda:+1",
        "cuda: 1",
        "cuda :1",
        "cuda:1:2",
        "cuda:x",
        "cpu:0",
        "cuda1",
        "opencl:",
        "vulkan",
        "cuda:99999999999999999999999",
        "cu da",
    ] {
        assert_eq!(text.parse::<Device>(), Err(Error::InvalidDevice { text: text.to_string() }), "{text:?}");
    }
    let msg = "tpu".parse::<Device>().unwrap_err().to_string();
    assert!(msg.contains("`tpu`") && msg.contains("cuda:N"), "{msg}");
}

#[test]
fn device_is_copy_hash_and_has_a_kind() {
    let set: HashSet<Device> = [Device::Cpu, Device::Cuda(0), Device::Cuda(0), Device::OpenCl(0)].into_iter().collect();
    assert_eq!(set.len(), 3);
    let d = Device::Cuda(2);
    let e = d; // Copy
    assert_eq!((d.kind(), e.kind(), Device::Cpu.kind(), Device::OpenCl(0).kind()), ("cuda", "cuda", "cpu", "opencl"));
}

#[test]
fn decide_default_prefers_tvm_device_then_cuda_then_cpu() {
    assert_eq!(decide_default(None, false), Ok(Device::Cpu));
    assert_eq!(decide_default(None, true), Ok(Device::Cuda(0)));
    // An empty or blank TVM_DEVICE counts as unset.
    assert_eq!(decide_default(Some(""), true), Ok(Device::Cuda(0)));
    assert_eq!(decide_default(Some("  "), false), Ok(Device::Cpu));
    // TVM_DEVICE wins, whatever was found, even for a device that is not there: the call
    // on it reports that (never a silent fallback).
    assert_eq!(decide_default(Some("cpu"), true), Ok(Device::Cpu));
    assert_eq!(decide_default(Some("cuda"), false), Ok(Device::Cuda(0)));
    assert_eq!(decide_default(Some("cuda:1"), false), Ok(Device::Cuda(1)));
    assert_eq!(decide_default(Some("opencl"), true), Ok(Device::OpenCl(0)));
    assert_eq!(decide_default(Some("OPENCL:3"), false), Ok(Device::OpenCl(3)));
    // An unparseable TVM_DEVICE is an error, not the CPU.
    for present in [false, true] {
        assert_eq!(decide_default(Some("gpu"), present), Err(Error::InvalidDevice { text: "gpu".into() }));
    }
}

#[test]
fn availability() {
    assert!(Device::Cpu.is_available());
    assert_eq!(Device::Cpu.check_available(), Ok(()));
    // Without the `opencl` feature no OpenCL device is available, and the reason says so;
    // with it, a device past the last one never is.
    #[cfg(not(feature = "opencl"))]
    {
        let err = Device::OpenCl(0).check_available().unwrap_err();
        assert!(matches!(err, Error::DeviceUnavailable { ref reason, .. } if reason.contains("opencl")), "{err}");
    }
    assert!(matches!(Device::OpenCl(1 << 20).check_available(), Err(Error::DeviceUnavailable { .. })));
    // CUDA: whatever this machine has, the answers agree with the device count.
    let n = Device::cuda_device_count();
    assert_eq!(Device::Cuda(0).is_available(), n > 0);
    assert!(!Device::Cuda(n).is_available());
    match Device::Cuda(n).check_available() {
        Err(Error::DeviceUnavailable { device, reason }) => {
            assert_eq!(device, format!("cuda:{n}"));
            assert!(!reason.is_empty() && reason.starts_with(|c: char| c.is_lowercase()), "{reason}");
        }
        other => panic!("expected DeviceUnavailable, got {other:?}"),
    }
}

#[test]
fn the_default_is_decided_once_and_is_consistent() {
    let first = Device::try_default();
    assert_eq!(Device::try_default(), first);
    match std::env::var("TVM_DEVICE") {
        Ok(v) if !v.trim().is_empty() => assert_eq!(first, v.parse()),
        _ => {
            let want = if Device::cuda_device_count() > 0 { Device::Cuda(0) } else { Device::Cpu };
            assert_eq!(first, Ok(want));
        }
    }
    assert_eq!(Device::default(), first.unwrap_or(Device::Cpu));
}
