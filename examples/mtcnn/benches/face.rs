//! The face detector's side of the peer comparison (`benches/peers/face.sh`): MTCNN's
//! networks and its whole pipeline, compiled by `compute!` (crate `tvm-mtcnn`), on the
//! inputs `benches/peers/face.py inputs DIR` wrote (P-Net on every level of a 1280 x 720
//! photograph's pyramid, R-Net on 64 crops, O-Net on 16, the whole detection of that
//! photograph); medians of repeated runs after a warm-up (at least 20 runs and 2 s per
//! case), written to DIR/tvm.json.
//!
//! `cargo bench -p tvm-mtcnn --bench face -- DIR [--device cpu|opencl]` (DIR: target/peers/face).

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tvm::{Device, Tensor};
use tvm_mtcnn::Detector;

fn tensor<const R: usize>(dir: &Path, e: &Value, device: &Device) -> tvm::DeviceTensor<f32, R> {
    let shape: Vec<usize> = e["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
    let bytes = std::fs::read(dir.join(e["file"].as_str().unwrap())).unwrap();
    let x: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    // NHWC (the networks' inputs as the reference feeds them) to the kernels' NCHW.
    let (n, h, w, c) = (shape[0], shape[1], shape[2], shape[3]);
    let mut y = vec![0.0; x.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    y[((b * c + k) * h + i) * w + j] = x[((b * h + i) * w + j) * c + k];
                }
            }
        }
    }
    let full = [n, c, h, w];
    let dims: [usize; R] = std::array::from_fn(|i| full[4 - R + i]);
    Tensor::from_vec(y, dims).unwrap().to_device(device).unwrap()
}

fn median(mut f: impl FnMut()) -> f64 {
    f();
    let (mut times, start) = (Vec::new(), Instant::now());
    while times.len() < 20 || start.elapsed() < Duration::from_secs(2) {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64());
        if times.len() >= 2000 {
            break;
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let dir = PathBuf::from(args.first().map_or("target/peers/face", String::as_str));
    let device = match args.iter().position(|a| a == "--device").map(|i| args[i + 1].as_str()) {
        Some("opencl") => Device::OpenCl(0),
        Some("cuda") => Device::Cuda(0),
        _ => Device::Cpu,
    };
    let Ok(doc) = std::fs::read(dir.join("inputs.json")) else {
        eprintln!(
            "face bench: no {}: run benches/peers/face.sh (or face.py inputs DIR) first",
            dir.join("inputs.json").display()
        );
        return;
    };
    let doc: Value = serde_json::from_slice(&doc).unwrap();
    let det = Detector::new(&tvm_mtcnn::models_dir().unwrap(), device).unwrap();
    let levels: Vec<tvm::DeviceTensor<f32, 3>> =
        doc["pnet"].as_array().unwrap().iter().map(|e| tensor(&dir, e, &device)).collect();
    let rnet: tvm::DeviceTensor<f32, 4> = tensor(&dir, &doc["rnet"], &device);
    let onet: tvm::DeviceTensor<f32, 4> = tensor(&dir, &doc["onet"], &device);
    let photo = tvm_mtcnn::read_rgb(Path::new(doc["photo"].as_str().unwrap())).unwrap();
    // The networks' outputs are read back (as a pipeline must) so a device finishes its work.
    let pnet = median(|| {
        for x in &levels {
            det.pnet.run(&device, x).unwrap().to_host().unwrap();
        }
    });
    let rnet = median(|| {
        let (reg, prob) = det.rnet.run(&device, &rnet).unwrap();
        (reg.to_host().unwrap(), prob.to_host().unwrap());
    });
    let onet = median(|| {
        let (reg, marks, prob) = det.onet.run(&device, &onet).unwrap();
        (reg.to_host().unwrap(), marks.to_host().unwrap(), prob.to_host().unwrap());
    });
    let faces = det.detect(&photo).unwrap().faces.len();
    let pipeline = median(|| {
        det.detect(&photo).unwrap();
    });
    let out = json!({
        "device": device.to_string(),
        "faces": faces,
        "cases": { "pnet": pnet, "rnet": rnet, "onet": onet, "pipeline": pipeline },
    });
    std::fs::write(dir.join("tvm.json"), out.to_string()).unwrap();
    println!("face bench on {device}: P-Net {:.2} ms, R-Net(64) {:.2} ms, O-Net(16) {:.2} ms, pipeline {:.2} ms ({faces} faces)",
        pnet * 1e3, rnet * 1e3, onet * 1e3, pipeline * 1e3);
}
