//! Model checks of the pool's protocol with loom: every interleaving of the submitting
//! thread and the workers (up to `LOOM_MAX_PREEMPTIONS` preemptions of a thread; the
//! test script sets 3) for a loop submitted while the workers have not started, spin,
//! sleep, or check out of the previous loop; a body that panics; a body that fails; a
//! loop started from inside a loop's body. Each iteration counts itself in a loom cell,
//! read by the submitting thread after the loop returns: loom reports an iteration that
//! ran twice, or after the loop returned, or one whose write does not happen before that
//! read; and every access to the pool's lifetime-erased body is checked against its
//! writes. A worker spins [`LOOM_SPINS`](super::LOOM_SPINS) times before it sleeps.
//!
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p tvm-runtime --release
//! --no-default-features --features rayon --lib pool --target-dir target/loom`

use super::{submit, worker, Pool, WORKER};
use crate::Error;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::SeqCst;

/// A count per iteration of a loop, in loom cells.
struct Counts(Vec<UnsafeCell<u32>>);

// SAFETY: each cell is written by the one call of the body for its index (what the
// checks verify: loom reports two unordered accesses to a cell), and read after the loop.
unsafe impl Sync for Counts {}

impl Counts {
    fn new(n: usize) -> Counts {
        Counts((0..n).map(|_| UnsafeCell::new(0)).collect())
    }

    /// Counts iteration `k`.
    fn count(&self, k: usize) {
        // SAFETY: see the `Sync` impl: loom checks that no other access races with this.
        self.0[k].with_mut(|c| unsafe { *c += 1 });
    }

    /// Each iteration's count.
    fn get(&self) -> Vec<u32> {
        // SAFETY: as for `count`.
        self.0.iter().map(|c| c.with(|c| unsafe { *c })).collect()
    }
}

/// Runs `f` with a pool of `workers` worker threads of the model, then shuts the pool
/// down and joins them.
fn with_pool(workers: usize, f: impl FnOnce(&Pool)) {
    let p = Arc::new(Pool::new());
    p.workers.store(workers, SeqCst);
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let p = p.clone();
            loom::thread::spawn(move || {
                WORKER.with(|c| c.set(true));
                worker(&p)
            })
        })
        .collect();
    f(&p);
    p.shut_down.store(true, SeqCst);
    drop(p.sleep.lock().unwrap());
    p.wake.notify_all();
    for t in threads {
        t.join().unwrap();
    }
}

/// A loop of `n` iterations on `p`, each counting itself: every one ran exactly once.
fn counted_loop(p: &Pool, n: usize) {
    let counts = Counts::new(n);
    submit(p, n, &|k| {
        counts.count(k);
        Ok(())
    })
    .unwrap();
    assert_eq!(counts.get(), vec![1; n]);
}

/// One loop, submitted while the worker starts, spins or sleeps.
#[test]
fn a_loop_reaches_a_starting_spinning_or_sleeping_worker() {
    loom::model(|| with_pool(1, |p| counted_loop(p, 2)));
}

/// Two loops in a row: the second is submitted while the worker may still be checking
/// out of the first (a late check-in of the first must not run the second's body, nor
/// the first's after it returned).
#[test]
fn a_loop_right_after_another() {
    loom::model(|| {
        with_pool(1, |p| {
            counted_loop(p, 2);
            counted_loop(p, 2);
        })
    });
}

/// Two workers on one loop of three iterations.
#[test]
fn two_workers_share_a_loop() {
    loom::model(|| with_pool(2, |p| counted_loop(p, 3)));
}

/// A body that panics: the panic reaches the caller after every worker checked out, the
/// other iterations ran at most once, and the next loop runs every iteration.
#[test]
fn a_panicking_body() {
    loom::model(|| {
        with_pool(1, |p| {
            let counts = Counts::new(2);
            let r = catch_unwind(AssertUnwindSafe(|| {
                submit(p, 2, &|k| {
                    counts.count(k);
                    if k == 1 {
                        panic!("iteration 1");
                    }
                    Ok(())
                })
            }));
            let panic = r.expect_err("the panic reaches the caller");
            assert_eq!(panic.downcast_ref::<&str>(), Some(&"iteration 1"));
            assert!(counts.get().iter().all(|&c| c <= 1), "{:?}", counts.get());
            counted_loop(p, 2);
        })
    });
}

/// A body that returns an error: the loop returns it, and the next loop runs every
/// iteration with no error left over.
#[test]
fn a_failing_body() {
    loom::model(|| {
        with_pool(1, |p| {
            let r = submit(p, 2, &|k| match k {
                0 => Err(Error::Internal { message: "iteration 0".into() }),
                _ => Ok(()),
            });
            assert!(matches!(&r, Err(Error::Internal { message }) if message == "iteration 0"), "{r:?}");
            counted_loop(p, 2);
        })
    });
}

/// A loop started from inside a loop's body, on the submitting thread (the pool is
/// taken: the inner loop runs on the fallback) or on a worker (workers never submit):
/// every inner iteration of every outer one runs once, and nothing deadlocks.
#[test]
fn a_loop_inside_a_loop_body() {
    loom::model(|| {
        with_pool(1, |p| {
            let counts = Counts::new(4);
            submit(p, 2, &|outer| {
                submit(p, 2, &|inner| {
                    counts.count(outer * 2 + inner);
                    Ok(())
                })
            })
            .unwrap();
            assert_eq!(counts.get(), vec![1; 4]);
        })
    });
}
