//! Every schedule rule of docs/LANGUAGE.md §3: a schedule that breaks it is rejected with the
//! rule's own error, naming the right stage, axis or numbers.

use tvm_core::driver::build_schedule;
use tvm_core::frontend::parse_str;
use tvm_core::schedule::{ScheduleError, ScheduleErrorKind as K};
use tvm_core::Target;

const MATMUL: &str =
    "fn matmul(a: f32[M, K], b: f32[K, N]) -> c: f32[M, N] { c[i, j] = sum(a[i, k] * b[k, j] for k in 0..K); }";
const DENSE: &str = "fn dense(x: f32[M, K], w: f32[N, K], bias: f32[N]) -> out: f32[M, N] {
    let d[i, j]: f32[M, N] = sum(x[i, k] * w[j, k] for k in 0..K);
    out[i, j] = max(d[i, j] + bias[j], 0.0);
}";
const SOFTMAX: &str = "fn softmax(x: f32[M, N]) -> y: f32[M, N] {
    let m[i]: f32[M] = max(x[i, j] for j in 0..N);
    let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
    let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
    y[i, j] = e[i, j] / s[i];
}";
const POOL: &str = "fn pool(x: f32[N, C, H, W]) -> out: f32[N, C, H, W] { out[n, c, y, x] = x[n, c, y, x] * 2.0; }";

/// The errors of `kernel` with `schedule` for `target` (lowering included, for the rules
/// that need bounds).
fn errors(kernel: &str, target: &str, schedule: &str) -> Vec<ScheduleError> {
    let src = format!("{kernel}\nschedule!({target}) {{ {schedule} }}");
    let k = parse_str(&src).unwrap_or_else(|e| panic!("kernel parses: {e:?}"));
    let t = Target::parse(target.trim_matches('"')).expect("target parses");
    match build_schedule(&k, &t) {
        Err(e) => e,
        Ok(s) => match tvm_core::driver::lower(&s) {
            Err(e) => e,
            Ok(_) => Vec::new(),
        },
    }
}

fn one(kernel: &str, target: &str, schedule: &str) -> K {
    let e = errors(kernel, target, schedule);
    assert_eq!(e.len(), 1, "expected one error, got {e:#?}");
    let msg = e[0].to_string();
    assert!(!msg.ends_with('.'), "messages have no trailing period: {msg}");
    e[0].kind.clone()
}

#[test]
fn unknown_stage() {
    let k = one(MATMUL, "cpu", "z.parallel(z.i);");
    assert!(
        matches!(k, K::UnknownStage { ref name, ref known } if name == "z" && known.contains(&"c".to_string())),
        "{k:?}"
    );
}

#[test]
fn unknown_axis() {
    let k = one(MATMUL, "cpu", "c.parallel(c.q);");
    assert!(matches!(k, K::UnknownAxis { ref stage, ref axis, .. } if stage == "c" && axis == "q"), "{k:?}");
}

#[test]
fn axis_of_another_stage() {
    let k = one(DENSE, "cpu", "out.parallel(d.i);");
    assert!(
        matches!(k, K::AxisOfOtherStage { ref axis, ref owner, ref stage } if axis == "i" && owner == "d" && stage == "out"),
        "{k:?}"
    );
}

#[test]
fn axis_already_consumed() {
    let k = one(MATMUL, "cpu", "let (o, i) = c.split(c.i, 4); c.parallel(c.i);");
    assert!(matches!(k, K::AxisConsumed { ref axis, by: "split", .. } if axis == "i"), "{k:?}");
    let k = one(MATMUL, "cpu", "let f = c.fuse(c.i, c.j); c.parallel(c.j);");
    assert!(matches!(k, K::AxisConsumed { ref axis, by: "fuse", .. } if axis == "j"), "{k:?}");
}

#[test]
fn split_factor_not_positive() {
    let k = one(MATMUL, "cpu", "let (o, i) = c.split(c.i, 0);");
    assert!(matches!(k, K::BadSplitFactor { ref value } if value == "0"), "{k:?}");
    assert!(!errors(MATMUL, "cpu", "let (o, i) = c.split_nparts(c.i, -2);").is_empty());
}

#[test]
fn fuse_not_adjacent() {
    let k = one(POOL, "cpu", "let f = out.fuse(out.n, out.y);");
    assert!(matches!(k, K::FuseNotAdjacent { ref outer, ref inner, .. } if outer == "n" && inner == "y"), "{k:?}");
}

#[test]
fn reorder_names_an_axis_twice() {
    let k = one(MATMUL, "cpu", "c.reorder(c.j, c.i, c.j);");
    assert!(matches!(k, K::ReorderDuplicate { ref axis, .. } if axis == "j"), "{k:?}");
}

#[test]
fn reduction_axis_bound_to_block() {
    let k = one(MATMUL, "cuda", "c.bind(c.i, block.y); c.bind(c.k, block.x);");
    assert!(matches!(k, K::ReduceAxisBoundToBlock { ref axis, tag: "block.x", .. } if axis == "k"), "{k:?}");
}

#[test]
fn two_axes_bound_to_one_tag() {
    let k = one(MATMUL, "cuda", "c.bind(c.i, thread.x); c.bind(c.j, thread.x);");
    assert!(
        matches!(k, K::DuplicateThreadTag { ref first, ref second, tag: "thread.x", .. } if first == "i" && second == "j"),
        "{k:?}"
    );
}

#[test]
fn compute_at_cycle() {
    let k = one(SOFTMAX, "cpu", "y.compute_at(m, m.i);");
    assert!(
        matches!(k, K::ComputeAtCycle { ref producer, ref consumer } if producer == "y" && consumer == "m"),
        "{k:?}"
    );
}

#[test]
fn compute_at_skips_a_consumer_and_lists_legal_places() {
    // `s` runs inside `y`'s row loop, so `e` (read by both) may go at `y.i`, not inside `s`.
    let e = errors(SOFTMAX, "cpu", "s.compute_at(y, y.i); e.compute_at(s, s.i);");
    assert_eq!(e.len(), 1, "{e:#?}");
    let K::ComputeAtSkipsConsumer { ref producer, ref skipped, ref legal, .. } = e[0].kind else { panic!("{e:?}") };
    assert_eq!((producer.as_str(), skipped.as_str()), ("e", "y"));
    assert_eq!(legal, &vec!["y.i".to_string()]);
    assert!(e[0].help().unwrap().contains("`y.i`"), "{:?}", e[0].help());
    // With `s` at the root, only the root is legal.
    let e = errors(SOFTMAX, "cpu", "e.compute_at(s, s.i);");
    assert!(
        matches!(&e[..], [ScheduleError { kind: K::ComputeAtSkipsConsumer { legal, .. }, .. }] if legal.is_empty()),
        "{e:?}"
    );
    assert!(e[0].help().unwrap().contains("compute_root"), "{:?}", e[0].help());
}

#[test]
fn block_larger_than_the_target_allows() {
    let k = one(
        "fn f(a: f32[8192]) -> c: f32[8192] { c[i] = a[i]; }",
        "cuda",
        "let (b, t) = c.split(c.i, 2048); c.bind(b, block.x); c.bind(t, thread.x);",
    );
    assert!(matches!(k, K::BlockTooLarge { threads: 2048, max: 1024, .. }), "{k:?}");
    // The target's own limit is the one checked.
    let e = errors(
        "fn f(a: f32[8192]) -> c: f32[8192] { c[i] = a[i]; }",
        "\"cuda -max_threads_per_block=256\"",
        "let (b, t) = c.split(c.i, 512); c.bind(b, block.x); c.bind(t, thread.x);",
    );
    assert!(matches!(e[..], [ScheduleError { kind: K::BlockTooLarge { threads: 512, max: 256, .. }, .. }]), "{e:?}");
}

#[test]
fn bind_on_cpu() {
    let k = one(MATMUL, "cpu", "c.bind(c.i, block.x);");
    assert!(matches!(k, K::BindOnCpu { ref axis } if axis == "i"), "{k:?}");
}

#[test]
fn parallel_or_vectorize_on_a_reduction_axis() {
    let k = one(MATMUL, "cpu", "c.parallel(c.k);");
    assert!(matches!(k, K::ParallelOnReduce { ref axis, .. } if axis == "k"), "{k:?}");
    let k = one(MATMUL, "cpu", "c.vectorize(c.k);");
    assert!(matches!(k, K::VectorizeOnReduce { ref axis, .. } if axis == "k"), "{k:?}");
}

#[test]
fn vectorize_not_innermost() {
    let k = one("fn f(a: f32[8, 8]) -> c: f32[8, 8] { c[i, j] = a[i, j]; }", "cpu", "c.vectorize(c.i);");
    assert!(
        matches!(k, K::VectorizeNotInnermost { ref axis, ref innermost, .. } if axis == "i" && innermost == "j"),
        "{k:?}"
    );
}

#[test]
fn vectorize_unknown_extent() {
    let k = one("fn f(a: f32[n]) -> c: f32[n] { c[i] = a[i]; }", "cpu", "c.vectorize(c.i);");
    assert!(matches!(k, K::VectorizeUnknownExtent { ref axis, .. } if axis == "i"), "{k:?}");
}

#[test]
fn compute_at_axis_not_in_consumer() {
    let k = one(DENSE, "cpu", "d.compute_at(out, d.j);");
    assert!(
        matches!(k, K::ComputeAtAxisNotInConsumer { ref consumer, ref axis, ref owner, ref legal } if consumer == "out" && axis == "j" && owner == "d" && legal.len() == 2),
        "{k:?}"
    );
}

#[test]
fn compute_inline_of_output_or_reduction() {
    let k = one(DENSE, "cpu", "out.compute_inline();");
    assert!(matches!(k, K::InlineOutput { ref stage } if stage == "out"), "{k:?}");
    let k = one(DENSE, "cpu", "d.compute_inline();");
    assert!(matches!(k, K::InlineReduction { ref stage } if stage == "d"), "{k:?}");
}

#[test]
fn shared_memory_beyond_the_limit() {
    // A 1 x 16384 f32 row is 64 KiB, over the default 48 KiB.
    let e = errors(
        "fn f(a: f32[64, 16384]) -> c: f32[64, 16384] { c[i, j] = a[i, j] * 2.0; }",
        "cuda",
        "c.bind(c.i, block.x); let (o, t) = c.split(c.j, 256); c.bind(t, thread.x);
         let a_s = a.cache_read(shared, [c]); a_s.compute_at(c, c.i);
         let [r, col] = a_s.axes(); let (co, ci) = a_s.split(col, 256); a_s.bind(ci, thread.x);",
    );
    assert!(
        matches!(e[..], [ScheduleError { kind: K::SharedMemoryExceeded { bytes: 65536, limit: 49152 }, .. }]),
        "{e:?}"
    );
}

#[test]
fn shared_scope_on_cpu() {
    let k = one(MATMUL, "cpu", "let a_s = a.cache_read(shared, [c]);");
    assert!(matches!(k, K::SharedOnCpu { ref stage } if stage == "a"), "{k:?}");
}

#[test]
fn unknown_target_string() {
    let src = format!("{MATMUL}\nschedule!(\"vulkan -foo\") {{ c.parallel(c.i); }}");
    let k = parse_str(&src).expect("parses");
    let e = tvm_core::frontend::check_schedules(&k);
    assert!(
        matches!(e[..], [ScheduleError { kind: K::UnknownTarget { ref target, .. }, .. }] if target.contains("vulkan")),
        "{e:?}"
    );
}

#[test]
fn unknown_primitive_or_arity() {
    let k = one(MATMUL, "cpu", "c.paralel(c.i);");
    assert!(matches!(k, K::UnknownPrimitive { ref name } if name == "paralel"), "{k:?}");
    let k = one(MATMUL, "cpu", "let (o, i) = c.split(c.i);");
    assert!(matches!(k, K::WrongArity { ref name, got: 1, .. } if name == "split"), "{k:?}");
}

#[test]
fn independent_errors_are_all_reported() {
    let e = errors(MATMUL, "cpu", "c.parallel(c.q); let (o, i) = c.split(c.j, 0); c.bind(c.i, block.x);");
    assert_eq!(e.len(), 3, "{e:#?}");
}

// `prefetch(tensor, axis, offset)`: CPU only, a positive distance, at a loop that stays
// a loop, of a tensor with a fixed buffer that the loop reads.

#[test]
fn prefetch_on_gpu() {
    let k = one(MATMUL, "cuda", "c.bind(c.i, block.x); c.bind(c.j, thread.x); c.prefetch(a, c.i, 1);");
    assert!(matches!(k, K::PrefetchOnGpu { ref tensor } if tensor == "a"), "{k:?}");
}

#[test]
fn prefetch_distance_must_be_positive() {
    let k = one(MATMUL, "cpu", "c.prefetch(a, c.i, 0);");
    assert!(matches!(k, K::BadPrefetchOffset { ref value } if value == "0"), "{k:?}");
    let k = one(MATMUL, "cpu", "c.prefetch(a, c.i, n);");
    assert!(matches!(k, K::BadPrefetchOffset { ref value } if value == "n"), "{k:?}");
}

#[test]
fn prefetch_at_an_axis_split_afterwards() {
    let k = one(MATMUL, "cpu", "c.prefetch(a, c.i, 1); let (io, ii) = c.split(c.i, 4);");
    let ok = matches!(k, K::PrefetchAxisGone { ref axis, ref tensor, .. } if axis == "i" && tensor == "a");
    assert!(ok, "{k:?}");
}

#[test]
fn prefetch_at_a_vectorized_axis() {
    let s = "let (jo, ji) = c.split(c.j, 8); c.reorder(c.i, jo, c.k, ji); c.vectorize(ji); c.prefetch(b, ji, 1);";
    let k = one(MATMUL, "cpu", s);
    assert!(matches!(k, K::PrefetchAtVectorized { ref axis, .. } if axis == "ji"), "{k:?}");
}

#[test]
fn prefetch_of_a_stage_inside_a_loop_nest() {
    let k = one(DENSE, "cpu", "d.compute_at(out, out.i); out.prefetch(d, out.i, 1);");
    assert!(matches!(k, K::PrefetchNotRoot { ref tensor } if tensor == "d"), "{k:?}");
}

#[test]
fn prefetch_of_what_a_parallel_loop_writes() {
    let k = one(MATMUL, "cpu", "c.parallel(c.i); c.prefetch(c, c.i, 1);");
    let ok = matches!(k, K::PrefetchWrittenInParallel { ref tensor, ref axis, .. } if tensor == "c" && axis == "i");
    assert!(ok, "{k:?}");
    // At a serial loop, or of a tensor the loop only reads: fine.
    assert!(errors(MATMUL, "cpu", "c.prefetch(c, c.i, 1);").is_empty());
    assert!(errors(MATMUL, "cpu", "c.parallel(c.i); c.prefetch(a, c.i, 1);").is_empty());
}

#[test]
fn prefetch_of_a_region_without_bounds() {
    let gather = "fn gather(table: f32[V, D], ids: i32[N]) -> y: f32[N, D] { y[i, j] = table[ids[i] as i64, j]; }";
    let k = one(gather, "cpu", "y.prefetch(table, y.i, 1);");
    assert!(matches!(k, K::PrefetchUnbounded { ref tensor, .. } if tensor == "table"), "{k:?}");
    // `ids` itself has a bounded region.
    assert!(errors(gather, "cpu", "y.prefetch(ids, y.i, 4);").is_empty());
}

#[test]
fn prefetch_of_a_tensor_the_loop_does_not_read() {
    // `x` is read by the root stage `d`, not inside `out`'s loops.
    let k = one(DENSE, "cpu", "d.compute_root(); out.prefetch(x, out.i, 1);");
    let ok = matches!(k, K::PrefetchNotRead { ref stage, ref axis, ref tensor }
        if stage == "out" && axis == "i" && tensor == "x");
    assert!(ok, "{k:?}");
    // Read inside the loop once `d` is computed there.
    assert!(errors(DENSE, "cpu", "d.compute_at(out, out.i); out.prefetch(x, out.i, 1);").is_empty());
}

/// A reduction computed at block level (shared memory) that no thread binding divides:
/// every thread would accumulate into the same elements. Bound to threads (a cross-thread
/// reduction), or computed inside the thread loop (local), it is legal.
#[test]
fn shared_reduction_without_a_thread_is_a_race() {
    let src = "fn r(x: f32[64, 64]) -> y: f32[64, 64] {
        let s[i]: f32[64] = sum(x[i, k] for k in 0..64);
        y[i, j] = x[i, j] / s[i];
    }";
    let base = "y.bind(y.i, block.x); y.bind(y.j, thread.x);";
    let k = one(src, "cuda", &format!("{base} s.compute_at(y, y.i);"));
    assert!(matches!(k, K::SharedReductionNotBound { ref stage } if stage == "s"), "{k:?}");
    let cross = "s.compute_at(y, y.i); let (ko, ki) = s.split(s.k, 32); s.bind(ki, thread.x);";
    let ok = errors(src, "cuda", &format!("{base} {cross}"));
    assert!(ok.is_empty(), "{ok:?}");
    let ok = errors(src, "cuda", &format!("{base} s.compute_at(y, y.j);"));
    assert!(ok.is_empty(), "{ok:?}");
}

/// A `local` stage (per-thread registers) with an axis bound to a thread: the others would
/// read elements they do not hold. The same binding on a `shared` cache is a cooperative
/// fetch, and legal.
#[test]
fn local_stage_bound_to_a_thread_is_a_race() {
    let src = "fn t(x: f32[64, 64]) -> y: f32[64, 64] { y[i, j] = x[j, i]; }";
    let sched = |scope: &str| {
        format!(
            "let c = x.cache_read({scope}, [y]); y.bind(y.i, block.x); y.bind(y.j, thread.x); \
             c.compute_at(y, y.i); c.bind(c.ax1, thread.x);"
        )
    };
    let k = one(src, "cuda", &sched("local"));
    assert!(
        matches!(k, K::LocalStageBoundToThread { ref axis, ref tag, .. } if axis == "ax1" && tag == "thread.x"),
        "{k:?}"
    );
    let ok = errors(src, "cuda", &sched("shared"));
    assert!(ok.is_empty(), "{ok:?}");
}

/// A stage attached inside a thread-bound loop spreads over no more threads of that
/// index than the loop has: everything under the loop is guarded by its extent, so the
/// extra threads would never copy their part (and no barrier could follow the copy).
/// As many threads, or fewer, is legal.
#[test]
fn a_nested_stage_binds_no_more_threads_than_the_loop_around_it() {
    let src = "fn t(x: f32[64, 64]) -> y: f32[64, 64] { y[i, j] = x[j, i] * 2.0; }";
    let sched = |copy: i64| {
        format!(
            "let c = x.cache_read(shared, [y]); let (to, ti) = y.split(y.j, 16); y.reorder(y.i, ti, to); \
             y.bind(y.i, block.x); y.bind(ti, thread.x); c.compute_at(y, to); \
             let (co, ci) = c.split(c.ax0, {copy}); c.bind(ci, thread.x);"
        )
    };
    let k = one(src, "cuda", &sched(32));
    assert!(
        matches!(k, K::NestedThreadsExceed { ref axis, ref tag, threads: 32, ref outer_axis, outer_threads: 16, .. }
            if axis == "ci" && tag == "thread.x" && outer_axis == "ti"),
        "{k:?}"
    );
    for fits in [16, 8] {
        let ok = errors(src, "cuda", &sched(fits));
        assert!(ok.is_empty(), "{fits}: {ok:?}");
    }
}
