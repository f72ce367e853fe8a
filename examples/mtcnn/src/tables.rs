//! The interpolation tables of OpenCV's `cv2.resize(.., INTER_AREA)`, built as OpenCV
//! builds them (the same double arithmetic), for the resize and crop kernels: each
//! output row or column is a list of taps, a source index and a weight.
//!
//! Shrinking on both axes is area interpolation (`computeResizeAreaTab`: each output pixel
//! is the mean of the source pixels it covers, partly covered ones weighted by the part;
//! parts under 1e-3 of a pixel are dropped). Otherwise OpenCV emulates it with bilinear
//! taps placed so that whole source pixels map to whole output pixels (its "area mode"
//! of the linear resize), on both axes; equal sizes copy.

/// The taps of each output index along one axis.
pub type Taps = Vec<Vec<(i64, f32)>>;

/// OpenCV's choice for a `src_w x src_h` image resized to `dst_w x dst_h`: the taps of
/// the columns and of the rows.
pub fn resize_taps(src_w: usize, src_h: usize, dst_w: usize, dst_h: usize) -> (Taps, Taps) {
    if src_w == dst_w && src_h == dst_h {
        let id = |n: usize| (0..n).map(|i| vec![(i as i64, 1.0)]).collect();
        return (id(dst_w), id(dst_h));
    }
    let (sx, sy) = (src_w as f64 / dst_w as f64, src_h as f64 / dst_h as f64);
    if sx >= 1.0 && sy >= 1.0 {
        (area(src_w, dst_w), area(src_h, dst_h))
    } else {
        (linear(src_w, dst_w), linear(src_h, dst_h))
    }
}

/// `computeResizeAreaTab`, with OpenCV's `scale = 1 / (dsize / ssize)`.
fn area(ssize: usize, dsize: usize) -> Taps {
    let scale = 1.0 / (dsize as f64 / ssize as f64);
    let last = ssize as i64 - 1;
    (0..dsize)
        .map(|dx| {
            let mut taps = Vec::new();
            let fsx1 = dx as f64 * scale;
            let fsx2 = fsx1 + scale;
            let cell = scale.min(ssize as f64 - fsx1);
            let sx2 = (fsx2.floor() as i64).min(last);
            let sx1 = (fsx1.ceil() as i64).min(sx2);
            if sx1 as f64 - fsx1 > 1e-3 {
                taps.push((sx1 - 1, ((sx1 as f64 - fsx1) / cell) as f32));
            }
            for sx in sx1..sx2 {
                taps.push((sx, (1.0 / cell) as f32));
            }
            if fsx2 - sx2 as f64 > 1e-3 {
                taps.push((sx2, ((fsx2 - sx2 as f64).min(1.0).min(cell) / cell) as f32));
            }
            taps
        })
        .collect()
}

/// The linear resize's coefficients in OpenCV's area mode (enlarging).
fn linear(ssize: usize, dsize: usize) -> Taps {
    let inv = dsize as f64 / ssize as f64;
    let scale = 1.0 / inv;
    let last = ssize as i64 - 1;
    (0..dsize)
        .map(|dx| {
            let mut sx = (dx as f64 * scale).floor() as i64;
            let mut fx = ((dx + 1) as f64 - (sx + 1) as f64 * inv) as f32;
            fx = if fx <= 0.0 { 0.0 } else { fx - fx.floor() };
            if sx < 0 {
                (sx, fx) = (0, 0.0);
            }
            if sx >= last {
                (sx, fx) = (last, 0.0);
            }
            vec![(sx, 1.0 - fx), ((sx + 1).min(last), fx)]
        })
        .collect()
}

/// The taps as the kernels take them: `count x width` indices (shifted by `offset`) and
/// weights, rows padded with weight-0 taps that repeat the row's first index.
pub fn flatten(taps: &Taps, width: usize, offset: i64, idx: &mut Vec<i32>, w: &mut Vec<f32>) {
    for row in taps {
        let first = row.first().map_or(0, |t| t.0);
        for k in 0..width {
            let (i, wt) = row.get(k).copied().unwrap_or((first, 0.0));
            idx.push(i32::try_from(i + offset).unwrap_or(i32::MAX));
            w.push(wt);
        }
    }
}

/// The most taps of any row.
pub fn width(taps: &Taps) -> usize {
    taps.iter().map(Vec::len).max().unwrap_or(1).max(1)
}
