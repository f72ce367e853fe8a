//! Bad input is an `Err` on every backend (docs/LANGUAGE.md §4): an index read from a
//! tensor outside the dim it indexes, an integer division or remainder by zero. Good input
//! next to it gives the plain reference's result, and `MIN / -1` wraps everywhere.

use super::backends;
use tvm::{Error, Tensor};

pub(crate) mod kernels {
    tvm::compute! {
        /// Rows of `table` picked by `ids` (an embedding lookup); the row index is read
        /// from memory, so it is checked; the column index is proved.
        pub fn embed(table: f32[V, D], ids: i32[N]) -> y: f32[N, D] {
            y[i, j] = table[ids[i] as i64, j];
        }
        schedule!(cpu) {
            y.parallel(y.i);
            let (jo, ji) = y.split(y.j, 8);
            y.vectorize(ji);
        }
    }

    tvm::compute! {
        /// A gather whose index varies along the vectorized axis: each lane is checked.
        pub fn gather(x: f32[V], ids: i64[N]) -> y: f32[N] {
            y[i] = x[ids[i]] * 2.0;
        }
        schedule!(cpu) {
            let (io, ii) = y.split(y.i, 16);
            y.vectorize(ii);
        }
    }

    tvm::compute! {
        /// Integer division and remainder with divisors read from memory.
        pub fn divide(a: i32[N], b: i32[N]) -> q: i32[N] {
            q[i] = a[i] / b[i];
        }
        schedule!(cpu) {
            let (io, ii) = q.split(q.i, 16);
            q.vectorize(ii);
        }
    }

    tvm::compute! {
        pub fn remainder(a: i64[N], b: i64[N]) -> r: i64[N] {
            r[i] = a[i] % b[i];
        }
    }

    tvm::compute! {
        /// A checked read in one branch of a condition: only a taken branch is checked
        /// (WGSL's `select` evaluates both sides, so the WebGPU code branches instead).
        pub fn pick(x: f32[N], ids: i32[N], t: f32[M]) -> y: f32[N] {
            y[i] = if x[i] > 0.0 { t[ids[i] as i64] } else { -1.0 };
        }
    }

    tvm::compute! {
        /// A read whose index the compiler cannot bound (`k` is a scalar): checked.
        pub fn shifted(x: f32[M], k: i64, n: usize) -> y: f32[n] {
            y[i] = x[i + k];
        }
    }
}

mod sizes {
    tvm::compute! {
        /// An output whose size follows from the inputs' (n * m elements).
        pub fn outer(a: f32[n], b: f32[m]) -> c: f32[n, m] {
            c[i, j] = a[i] * b[j];
        }
    }

    tvm::compute! {
        /// An intermediate of n * m elements at the root, reduced to n.
        pub fn outer_sums(a: f32[n], b: f32[m]) -> s: f32[n] {
            let t[i, j]: f32[n, m] = a[i] * b[j];
            s[i] = sum(t[i, j] for j in 0..m);
        }
        schedule!(cpu) {
            t.compute_root();
        }
    }
}

fn tensor<T: tvm::Element, const R: usize>(data: Vec<T>, shape: [usize; R]) -> Tensor<T, R> {
    Tensor::from_vec(data, shape).unwrap()
}

#[test]
fn embedding_lookup_in_range_and_out_of_range() {
    let (v, d, n) = (5usize, 19usize, 7usize);
    let table: Vec<f32> = (0..v * d).map(|x| x as f32 * 0.5 - 3.0).collect();
    let tt = tensor(table.clone(), [v, d]);
    let good = vec![4i32, 0, 2, 2, 1, 3, 4];
    let want: Vec<f32> = good.iter().flat_map(|&r| table[r as usize * d..][..d].to_vec()).collect();
    for dev in backends() {
        let mut y = Tensor::zeros([n, d]);
        kernels::embed::run(dev, &tt, &tensor(good.clone(), [n]), &mut y).unwrap();
        assert_eq!(y.as_slice(), &want[..], "embed on {dev}");
        for (bad, at) in [(5i32, 3usize), (-1, 0), (i32::MAX, 6), (i32::MIN, 2)] {
            let mut ids = good.clone();
            ids[at] = bad;
            let err = kernels::embed::run(dev, &tt, &tensor(ids, [n]), &mut y).unwrap_err();
            let want = Error::IndexOutOfBounds {
                kernel: "embed".into(),
                tensor: "table".into(),
                dim: 0,
                index: "ids[i] as i64".into(),
                value: bad as i64,
                extent: v as i64,
            };
            assert_eq!(err, want, "embed with id {bad} on {dev}");
        }
        // An empty table: every lookup is out of bounds, and nothing is read.
        let empty = tensor(Vec::<f32>::new(), [0, d]);
        let err = kernels::embed::run(dev, &empty, &tensor(good.clone(), [n]), &mut y).unwrap_err();
        assert!(matches!(err, Error::IndexOutOfBounds { extent: 0, .. }), "{err} on {dev}");
        // No ids: nothing to check.
        let mut y0 = Tensor::zeros([0, d]);
        kernels::embed::run(dev, &empty, &tensor(Vec::new(), [0]), &mut y0).unwrap();
    }
    // The message names the kernel, the index, its value, the tensor and the extent.
    let mut y = Tensor::zeros([n, d]);
    let e = kernels::embed::run(&tvm::Device::Cpu, &tt, &tensor(vec![9; n], [n]), &mut y).unwrap_err();
    assert_eq!(
        e.to_string(),
        "index out of bounds in `embed`: `ids[i] as i64` is 9, but dimension 0 of `table` has size 5"
    );
}

#[test]
fn vectorized_gather_checks_every_lane() {
    let v = 40usize;
    let x: Vec<f32> = (0..v).map(|i| i as f32).collect();
    let tx = tensor(x, [v]);
    for n in [1usize, 16, 37] {
        let ids: Vec<i64> = (0..n as i64).map(|i| (i * 7) % v as i64).collect();
        let want: Vec<f32> = ids.iter().map(|&i| i as f32 * 2.0).collect();
        for dev in backends() {
            let mut y = Tensor::zeros([n]);
            if !super::ran(
                dev,
                "gather",
                Some("i64"),
                kernels::gather::run(dev, &tx, &tensor(ids.clone(), [n]), &mut y),
            ) {
                continue;
            }
            assert_eq!(y.as_slice(), &want[..], "gather n={n} on {dev}");
            // One bad lane anywhere (the main vector loop or its tail).
            for at in [0, n / 2, n - 1] {
                let mut bad = ids.clone();
                bad[at] = v as i64 + at as i64;
                let err = kernels::gather::run(dev, &tx, &tensor(bad, [n]), &mut y).unwrap_err();
                assert!(
                    matches!(&err, Error::IndexOutOfBounds { value, extent: 40, .. } if *value == v as i64 + at as i64),
                    "gather n={n} bad lane {at} on {dev}: {err}"
                );
            }
        }
    }
}

#[test]
fn integer_division_by_zero_is_an_error_and_min_over_minus_one_wraps() {
    let a: Vec<i32> = vec![7, -7, 7, -7, 0, i32::MAX, i32::MIN, i32::MIN, 100, -100, 3, 1, 5, 6, 7, 8, 9, 10];
    let b: Vec<i32> = vec![2, 2, -2, -2, 5, 1, 3, -1, 7, 7, 1, 1, 2, 3, 4, 5, 6, 7];
    let n = a.len();
    let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_div(*y)).collect();
    let (ta, tb) = (tensor(a.clone(), [n]), tensor(b.clone(), [n]));
    for dev in backends() {
        let mut q = Tensor::zeros([n]);
        kernels::divide::run(dev, &ta, &tb, &mut q).unwrap();
        assert_eq!(q.as_slice(), &want[..], "divide on {dev}");
        for at in [0, 7, n - 1] {
            let mut z = b.clone();
            z[at] = 0;
            let err = kernels::divide::run(dev, &ta, &tensor(z, [n]), &mut q).unwrap_err();
            assert_eq!(err, Error::DivisionByZero { kernel: "divide".into(), divisor: "b[i]".into() }, "on {dev}");
        }
        let a64: Vec<i64> = vec![i64::MIN, i64::MIN, -7, 7, 0];
        let b64: Vec<i64> = vec![-1, 3, 2, -2, 9];
        let want: Vec<i64> = a64.iter().zip(&b64).map(|(x, y)| x.wrapping_rem(*y)).collect();
        let mut r = Tensor::zeros([5]);
        let ran = kernels::remainder::run(dev, &tensor(a64.clone(), [5]), &tensor(b64, [5]), &mut r);
        if !super::ran(dev, "remainder", Some("i64"), ran) {
            continue;
        }
        assert_eq!(r.as_slice(), &want[..], "remainder on {dev}");
        let err = kernels::remainder::run(dev, &tensor(a64, [5]), &tensor(vec![1, 2, 0, 4, 5], [5]), &mut r);
        assert!(matches!(err, Err(Error::DivisionByZero { .. })), "remainder on {dev}: {err:?}");
    }
    let e = kernels::divide(&ta, &tensor(vec![0; n], [n])).unwrap_err();
    assert_eq!(e.to_string(), "division by zero in `divide`: the divisor `b[i]` is 0");
}

#[test]
fn a_check_in_a_branch_not_taken_reports_nothing() {
    let t = tensor(vec![10.0f32, 20.0], [2]);
    let x = tensor(vec![1.0f32, -1.0, 1.0, -2.0], [4]);
    for dev in backends() {
        // The bad ids (99, -5) sit where the condition is false: no error.
        let mut y = Tensor::zeros([4]);
        kernels::pick::run(dev, &x, &tensor(vec![0, 99, 1, -5], [4]), &t, &mut y)
            .unwrap_or_else(|e| panic!("pick on {dev}: {e}"));
        assert_eq!(y.as_slice(), &[10.0, -1.0, 20.0, -1.0], "pick on {dev}");
        // Where it is true, the same id is an error.
        let err = kernels::pick::run(dev, &x, &tensor(vec![0, 1, 99, 0], [4]), &t, &mut y).unwrap_err();
        assert!(matches!(err, Error::IndexOutOfBounds { value: 99, extent: 2, .. }), "pick on {dev}: {err}");
    }
}

#[test]
fn an_index_the_compiler_cannot_bound_is_checked_at_run_time() {
    let x: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let tx = tensor(x, [10]);
    for dev in backends() {
        let mut y = Tensor::zeros([4]);
        kernels::shifted::run(dev, &tx, 6, 4, &mut y).unwrap();
        assert_eq!(y.as_slice(), &[6.0, 7.0, 8.0, 9.0], "shifted on {dev}");
        for (k, value) in [(7i64, 10i64), (-1, -1)] {
            let err = kernels::shifted::run(dev, &tx, k, 4, &mut y).unwrap_err();
            assert!(
                matches!(&err, Error::IndexOutOfBounds { tensor, index, value: v, extent: 10, .. }
                    if tensor == "x" && index == "i + k" && *v == value),
                "shifted k={k} on {dev}: {err}"
            );
        }
    }
}

/// Outputs and intermediates too large for memory are `Err(OutOfMemory)` naming the
/// tensor and its byte count, never an abort. (4 TiB: refused by the allocator of this
/// machine, which does not overcommit that much.)
#[test]
fn sizes_that_cannot_be_allocated_are_errors() {
    let n = 1usize << 20;
    let (a, b) = (Tensor::<f32, 1>::zeros([n]), Tensor::<f32, 1>::zeros([n]));
    let bytes = 4usize << 40;
    match sizes::outer(&a, &b) {
        Err(Error::OutOfMemory { device, bytes: got, reason }) => {
            assert_eq!((device.as_str(), got), ("cpu", bytes));
            assert!(reason.starts_with(&format!("output `c` of `outer` needs {bytes} bytes")), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The CPU schedule keeps `t` at the root (elsewhere `t` is inlined: on a GPU machine
    // the default device would compute the 2^40 products without it). Under
    // `TVM_SCHEDULES=derived` the written block is ignored and `t` may be inlined: then
    // there is no intermediate to refuse, and the products are not computed here.
    let schedule = sizes::outer_sums::schedule("cpu").unwrap();
    if schedule.contains("t.compute_root()") {
        let mut s = Tensor::zeros([n]);
        match sizes::outer_sums::run(&tvm::Device::Cpu, &a, &b, &mut s) {
            Err(Error::OutOfMemory { bytes: got, reason, .. }) => {
                assert_eq!(got, bytes);
                let want = format!("intermediate `t` of `outer_sums` needs {bytes} bytes");
                assert!(reason.starts_with(&want), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    } else {
        assert!(std::env::var("TVM_SCHEDULES").as_deref() == Ok("derived"), "{schedule}");
    }
    // Small sizes run, and give the reference.
    let (a, b) = (tensor(vec![1.0f32, 2.0, 3.0], [3]), tensor(vec![1.0f32, -1.0, 4.0, 0.5], [4]));
    for dev in backends() {
        let mut s = Tensor::zeros([3]);
        sizes::outer_sums::run(dev, &a, &b, &mut s).unwrap();
        assert_eq!(s.as_slice(), &[4.5, 9.0, 13.5], "on {dev}");
    }
    // And on every device, an output of 4 TiB is refused by name.
    let (a, b) = (Tensor::<f32, 1>::zeros([n]), Tensor::<f32, 1>::zeros([n]));
    for dev in backends() {
        let (da, db) = (a.to_device(dev).unwrap(), b.to_device(dev).unwrap());
        match sizes::outer::call_on(dev, &da, &db) {
            Err(Error::OutOfMemory { reason, .. }) => assert!(reason.contains("output `c` of `outer`"), "{reason}"),
            Err(e) => panic!("{dev}: {e}"),
            Ok(_) => panic!("{dev}: a 4 TiB output was allocated"),
        }
    }
}
