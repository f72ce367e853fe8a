//! `NAME::profile` and `TVM_PROFILE=1`: the times are sane and the FLOPs and bytes counted
//! from the lowered code are the kernel's (exact for vector add and matmul, whose CPU
//! schedule splits, vectorizes and partitions a tail).

use std::process::Command;
use tvm::{compute, Device, Tensor};

compute! {
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }
}

compute! {
    pub fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] {
        c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K);
    }

    schedule!(cpu) {
        let (jo, ji) = c.split(c.j, 16);
        c.reorder(c.i, jo, c.k, ji);
        c.parallel(c.i);
        c.vectorize(ji);
    }
}

#[test]
fn profile_reports_times_flops_and_bytes() {
    let n = 1 << 20;
    let a = Tensor::from_vec(vec![1.0f32; n], [n]).unwrap();
    let p = vector_add::profile(&Device::Cpu, &a, &a).unwrap();
    // At least 10 runs, or 3 where the first took over 0.1 s (a loaded machine; the times
    // are sorted, so the slowest run stands for the first).
    let slow = p.times.last().is_some_and(|&t| t > 0.1);
    assert!(p.times.len() >= 10 || (slow && p.times.len() >= 3), "{p:?}");
    assert!(p.min() > 0.0 && p.min() <= p.p20() && p.p20() <= p.median() && p.median() <= p.p80());
    assert_eq!(p.flops, Some(n as f64), "one add per element");
    assert_eq!(p.bytes, Some(12.0 * n as f64), "two loads and a store of 4 bytes per element");
    let line = p.to_string();
    assert!(line.starts_with("vector_add on cpu: ") && line.contains("GFLOP/s") && line.contains("GB/s"), "{line}");
    // A baseline one call away: a plain loop over the same data.
    let mut c = vec![0.0f32; n];
    let s = p
        .against(|| {
            for (c, a) in c.iter_mut().zip(a.as_slice()) {
                *c = a + a;
            }
            std::hint::black_box(&c);
            Ok::<(), ()>(())
        })
        .unwrap();
    assert!(s.ratio() > 0.0 && s.to_string().contains("| vector_add | cpu |"), "{s}");
}

#[test]
fn profile_counts_the_matmul_schedules_flops() {
    let (m, k, n) = (48, 40, 64);
    let a = Tensor::from_vec(vec![0.5f32; m * k], [m, k]).unwrap();
    let b = Tensor::from_vec(vec![0.25f32; k * n], [k, n]).unwrap();
    let p = matmul::profile(&Device::Cpu, &a, &b).unwrap();
    assert_eq!(p.flops, Some(2.0 * (m * n * k) as f64), "2·M·N·K");
    assert!(p.bytes.unwrap() >= 4.0 * (m * k + k * n + m * n) as f64, "at least every element once");
    assert!(p.gflops().unwrap() > 0.0);
    // Bad input is still an `Err`.
    assert!(matmul::profile(&Device::Cpu, &a, &a).is_err());
}

/// Run in a child with `TVM_PROFILE=1` by the test below.
#[test]
fn child_calls_once() {
    if std::env::var_os("TVM_PROFILE").is_none() {
        return;
    }
    let a = Tensor::from_vec(vec![1.0f32; 1000], [1000]).unwrap();
    let c = vector_add(&a, &a).unwrap();
    assert_eq!(c.as_slice()[0], 2.0);
}

#[test]
fn tvm_profile_prints_one_line_per_call() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_calls_once", "--nocapture", "--test-threads=1"])
        .env("TVM_PROFILE", "1")
        .env("TVM_DEVICE", "cpu")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("tvm profile: ")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("tvm profile: vector_add on cpu: ") && lines[0].contains("1 runs"), "{err}");
    // The line's figures agree with each other: its GB/s times its median is the 12 000
    // bytes of one run (1000 elements, two f32 loads and a store each), up to the
    // printing's rounding (three significant digits); and it names the FLOP rate.
    let line = lines[0];
    let number_before = |tail: &str| -> Option<(f64, String)> {
        let head = &line[..line.find(tail)?];
        let mut words = head.rsplit(' ');
        let unit = words.next()?.to_string();
        let value: f64 = words.next()?.trim_start_matches('(').parse().ok()?;
        Some((value, unit))
    };
    let (median, unit) = number_before(" median").unwrap_or_else(|| panic!("no median in {line}"));
    let seconds = median
        * match unit.as_str() {
            "s" => 1.0,
            "ms" => 1e-3,
            "µs" => 1e-6,
            other => panic!("unit {other} in {line}"),
        };
    let gbps = line
        .split(", ")
        .find_map(|part| part.strip_suffix(" GB/s").and_then(|v| v.parse::<f64>().ok()))
        .unwrap_or_else(|| panic!("no GB/s in {line}"));
    let bytes = gbps * 1e9 * seconds;
    // Both numbers are printed to three significant digits: each may be 0.5% off (1.005
    // printed 1.00 or 1.01), so their product up to about 1%.
    assert!((bytes - 12_000.0).abs() <= 0.015 * 12_000.0, "{bytes} bytes from {line}");
    assert!(line.contains(" GFLOP/s, "), "{line}");
}

/// On OpenCL (PoCL in CI, required there): the OpenCL program's own count, and real times.
#[test]
fn profile_on_opencl() {
    let device = Device::OpenCl(0);
    if let Err(e) = device.check_available() {
        if std::env::var("TVM_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("TVM_REQUIRE_TOOLS=1 but no OpenCL device: {e}");
        }
        println!("skipped: no OpenCL device ({e})");
        return;
    }
    let n = 1 << 16;
    let a = Tensor::from_vec(vec![1.0f32; n], [n]).unwrap();
    let p = vector_add::profile(&device, &a, &a).unwrap();
    assert_eq!(p.flops, Some(n as f64));
    assert_eq!(p.bytes, Some(12.0 * n as f64));
    assert!(p.device.starts_with("opencl") && p.median() > 0.0, "{p}");
    // Timed by the device's event timestamps (the kernel alone, without `run`'s copies).
    assert_eq!(p.clock, tvm::Clock::Device, "{p}");
    assert!(p.to_string().contains("device timestamps"), "{p}");
    // The CPU has no device clock.
    let c = vector_add::profile(&Device::Cpu, &a, &a).unwrap();
    assert_eq!(c.clock, tvm::Clock::Host, "{c}");
    assert!(!c.to_string().contains("device timestamps"), "{c}");
}
