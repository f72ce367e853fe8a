//! The threads of generated CPU code's parallel loops: the calling thread and
//! `threads - 1` workers that spin for a while after each loop before they sleep (as
//! ONNX Runtime's, TVM's and OpenMP's pools do), so that a kernel called again right
//! away finds them awake.
//!
//! Why not rayon alone: a rayon call from a thread outside its pool queues the work and
//! puts the calling thread to sleep until a worker is done, and rayon's workers fall
//! asleep soon after they run out of work: two wake-ups per kernel call, each a system
//! call and a context switch, which a short kernel (a softmax of 4096 x 1024 floats)
//! feels; `cargo bench --bench peers -- softmax` measures it.
//!
//! One loop runs on the pool at a time. A loop started while another one runs (kernels
//! called from several threads at once) or from inside a loop's body runs on rayon's
//! pool instead, as before.
//!
//! Correctness rests on [`par_for`] calling the body exactly once per index, which
//! [`ChunksMut`] needs to hand out disjoint chunks: the indices are handed out by one
//! atomic counter (`next`), each block of them to one thread.
//!
//! The synchronization primitives come from `sync.rs`: std's, or loom's under
//! `cfg(loom)`, where `loom.rs` model-checks the protocol (`RUSTFLAGS="--cfg loom"
//! cargo test -p tvm-rs-runtime --release --lib pool`, as `scripts/test.sh` runs it).

#[cfg(all(test, loom))]
mod loom;
mod sync;

use crate::Error;
use std::any::Any;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::*;
use sync::{AtomicBool, AtomicUsize, Condvar, Mutex, UnsafeCell, WORKER};

/// How long a worker spins for the next loop before it sleeps.
#[cfg(not(loom))]
const SPIN: std::time::Duration = std::time::Duration::from_micros(200);

/// How many times a worker checks for the next loop before it sleeps, under loom (which
/// explores every interleaving of those checks with the other threads, not time).
#[cfg(loom)]
const LOOM_SPINS: u32 = 1;

/// A block of a loop: iterations `lo..hi` (the loop body is inlined into it; one
/// dynamic call per block).
type Body<'a> = dyn Fn(usize, usize) -> Result<(), Error> + Sync + 'a;

struct Pool {
    /// Held by the thread whose loop runs on the pool.
    submit: Mutex<()>,
    /// Odd while a loop is open (its number), even between loops.
    epoch: AtomicUsize,
    /// Workers between checking in for an open loop and checking out.
    active: AtomicUsize,
    /// The open loop: its next iteration to hand out, its iteration count, and the
    /// divisor of what is left that sizes each block (guided: see `work`).
    next: AtomicUsize,
    n: AtomicUsize,
    parts: AtomicUsize,
    /// The open loop's body, its lifetime erased. Written only by the thread holding
    /// `submit` while no loop is open; read only by a thread that checked in and then saw
    /// its loop still open (a late worker that sees another epoch checks out without
    /// reading it; see `run_on_pool` for why the body is alive when it is read).
    body: UnsafeCell<Option<*const Body<'static>>>,
    /// Set by the first failing iteration (the others are then skipped).
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Where workers sleep, and how many do.
    sleep: Mutex<()>,
    wake: Condvar,
    sleepers: AtomicUsize,
    /// The workers that started.
    workers: AtomicUsize,
    /// Set when a model check is done with its pool: its workers then return.
    #[cfg(loom)]
    shut_down: AtomicBool,
}

// SAFETY: every field but `body` is Sync; `body` is written only under `submit` while no
// loop is open, when no thread reads it (a worker reads it only after seeing its loop
// open, and the loop that it saw was closed after every such worker checked out), and
// read by workers only while the writer waits for them (the protocol in `run_on_pool`).
unsafe impl Sync for Pool {}

impl Pool {
    /// A pool with no workers yet.
    fn new() -> Pool {
        Pool {
            submit: Mutex::new(()),
            epoch: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            n: AtomicUsize::new(0),
            parts: AtomicUsize::new(1),
            body: UnsafeCell::new(None),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            panic: Mutex::new(None),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            workers: AtomicUsize::new(0),
            #[cfg(loom)]
            shut_down: AtomicBool::new(false),
        }
    }
}

/// The pool, started at the first parallel loop: as many threads in all as rayon's pool
/// has (`RAYON_NUM_THREADS`, else one per core).
#[cfg(not(loom))]
fn pool() -> &'static Pool {
    use std::sync::OnceLock;
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        // Inside a rayon pool of the user's, its count would be that pool's.
        let threads = if rayon::current_thread_index().is_none() {
            rayon::current_num_threads()
        } else {
            std::env::var("RAYON_NUM_THREADS")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&n| n > 0)
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        }
        .max(1);
        let p: &'static Pool = Box::leak(Box::new(Pool::new()));
        // A worker that fails to start is simply not there: loops need no particular
        // number of workers (none at all runs them on rayon).
        let started = (0..threads - 1)
            .filter(|w| {
                std::thread::Builder::new()
                    .name(format!("tvm-worker-{w}"))
                    .spawn(move || {
                        WORKER.with(|c| c.set(true));
                        worker(p)
                    })
                    .is_ok()
            })
            .count();
        p.workers.store(started, SeqCst);
        p
    })
}

/// Runs `body(k)` once for every `k` in `0..n`, on the pool's threads (the caller's
/// included); the first error (by time) is returned, a panic is resumed in the caller.
/// Each `k` is passed to exactly one call, which [`ChunksMut::chunk`] relies on.
pub fn par_for<F>(n: usize, body: F) -> Result<(), Error>
where
    F: Fn(usize) -> Result<(), Error> + Sync,
{
    if n == 0 {
        return Ok(());
    }
    #[cfg(not(loom))]
    return submit(pool(), n, &body);
    // The model checks run `submit` on pools of their own, inside the model.
    #[cfg(loom)]
    return fallback(n, &body);
}

/// [`par_for`] on pool `p`, for `n > 0`.
fn submit<F>(p: &Pool, n: usize, body: &F) -> Result<(), Error>
where
    F: Fn(usize) -> Result<(), Error> + Sync,
{
    if n == 1 || p.workers.load(Relaxed) == 0 || WORKER.with(|c| c.get()) {
        return fallback(n, body);
    }
    let guard = match p.submit.try_lock() {
        Ok(g) => g,
        // Not poisoned by a body's panic, which is resumed once the lock is released
        // (below); the pool is consistent after any loop (each waits for every worker).
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return fallback(n, body),
    };
    let block = |lo: usize, hi: usize| (lo..hi).try_for_each(body);
    let r = run_on_pool(p, n, &block);
    drop(guard);
    r.unwrap_or_else(|panic| resume_unwind(panic))
}

/// rayon (every index once, as there).
#[cfg(not(loom))]
fn fallback<F>(n: usize, body: &F) -> Result<(), Error>
where
    F: Fn(usize) -> Result<(), Error> + Sync,
{
    use rayon::prelude::*;
    (0..n).into_par_iter().try_for_each(body)
}

/// In order on the calling thread, under loom (whose model has no rayon threads).
#[cfg(loom)]
fn fallback<F>(n: usize, body: &F) -> Result<(), Error>
where
    F: Fn(usize) -> Result<(), Error> + Sync,
{
    (0..n).try_for_each(body)
}

/// Runs the loop; its result, or the panic of a body (for the caller to resume once it
/// has released the pool).
fn run_on_pool(p: &Pool, n: usize, body: &Body<'_>) -> Result<Result<(), Error>, Box<dyn Any + Send>> {
    let threads = p.workers.load(Relaxed) + 1;
    // SAFETY (of the lifetime erasure): the pointer is dereferenced only by a thread
    // that checked in while the loop was open (below), and this function does not
    // return, so `body` stays alive, until the loop is closed and every such thread has
    // checked out.
    let erased: *const Body<'static> = unsafe { std::mem::transmute(body as *const Body<'_>) };
    // SAFETY: no loop is open (the previous call closed its loop and waited for every
    // worker that saw it open), and we hold `submit`: a worker checked in now sees a
    // closed or old epoch and does not read `body`; no other thread writes it.
    p.body.with_mut(|b| unsafe { *b = Some(erased) });
    p.next.store(0, Relaxed);
    p.n.store(n, Relaxed);
    p.parts.store(threads * 2, Relaxed);
    p.failed.store(false, Relaxed);
    // Open: the stores above are visible to whoever sees the odd epoch.
    let epoch = p.epoch.fetch_add(1, SeqCst) + 1;
    sync::seq_cst_order();
    if p.sleepers.load(SeqCst) > 0 {
        let _g = p.sleep.lock();
        p.wake.notify_all();
    }
    work(p);
    // Close, then wait for every thread that checked in. A worker checks in (`active`
    // up) and then checks that the loop is still open, both sequentially consistent: if
    // it saw the loop open, its check-in comes before the close below in the single
    // order of those operations, so the wait below sees it; if not, it checks out
    // without touching the body.
    p.epoch.store(epoch + 1, SeqCst);
    sync::seq_cst_order();
    while p.active.load(SeqCst) != 0 {
        sync::spin_loop();
    }
    // SAFETY: the loop is closed and every worker that saw it open has checked out.
    p.body.with_mut(|b| unsafe { *b = None });
    // Both taken before either is acted on: nothing is left for the next loop.
    let panic = p.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    let error = p.error.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(panic) = panic {
        return Err(panic);
    }
    Ok(match error {
        Some(e) => Err(e),
        None => Ok(()),
    })
}

/// Takes blocks of the open loop's iterations until none is left.
fn work(p: &Pool) {
    // SAFETY: called by the submitting thread, or by a worker that checked in while the
    // loop was open: the body is set and alive (see `run_on_pool`).
    let body = unsafe { &*p.body.with(|b| *b).expect("an open loop has a body") };
    let (n, parts) = (p.n.load(Relaxed), p.parts.load(Relaxed));
    let r = catch_unwind(AssertUnwindSafe(|| loop {
        // Guided blocks (OpenMP's `schedule(guided)`): each takes 1/parts of what is
        // left, at least one iteration: large blocks first (the counter touched about
        // `parts * ln(n)` times in all), single iterations at the end, so the threads
        // finish within about one iteration of each other. Fixed blocks of n/(8 threads)
        // could leave a thread idle for up to a block at the end (224 rows of the padded
        // conv2d's 3584 on two threads). `cargo bench --bench peers` measures the gemms,
        // conv2ds and softmax that run on it.
        let mut k = p.next.load(Relaxed);
        let hi = loop {
            if k >= n {
                return;
            }
            let hi = k + ((n - k) / parts).max(1);
            match p.next.compare_exchange_weak(k, hi, Relaxed, Relaxed) {
                Ok(_) => break hi,
                Err(now) => k = now,
            }
        };
        if p.failed.load(Relaxed) {
            return;
        }
        if let Err(e) = body(k, hi) {
            if !p.failed.swap(true, Relaxed) {
                *p.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            }
            return;
        }
    }));
    if let Err(panic) = r {
        p.failed.store(true, Relaxed);
        p.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(panic);
    }
}

/// A worker's life: every loop it sees open, it checks in for, works on while it is still
/// open, and checks out of. Returns only when a model check shuts its pool down.
fn worker(p: &Pool) {
    let mut seen = 0;
    while let Some(e) = wait_open(p, seen) {
        seen = e;
        p.active.fetch_add(1, SeqCst);
        sync::seq_cst_order();
        if p.epoch.load(SeqCst) == e {
            work(p);
        }
        p.active.fetch_sub(1, SeqCst);
    }
}

/// The number of the next open loop after `seen`: spinning for [`SPIN`], then asleep.
/// `None` only under loom, once the pool is shut down.
fn wait_open(p: &Pool, seen: usize) -> Option<usize> {
    let open = |e: usize| e % 2 == 1 && e != seen;
    #[cfg(not(loom))]
    let start = std::time::Instant::now();
    let mut spins = 0u32;
    loop {
        let e = p.epoch.load(SeqCst);
        if open(e) {
            return Some(e);
        }
        #[cfg(loom)]
        if p.shut_down.load(SeqCst) {
            return None;
        }
        sync::spin_loop();
        spins = spins.wrapping_add(1);
        #[cfg(not(loom))]
        if spins % 256 == 0 && start.elapsed() > SPIN {
            break;
        }
        #[cfg(loom)]
        if spins >= LOOM_SPINS {
            break;
        }
    }
    let mut g = p.sleep.lock().unwrap_or_else(|e| e.into_inner());
    p.sleepers.fetch_add(1, SeqCst);
    sync::seq_cst_order();
    loop {
        let e = p.epoch.load(SeqCst);
        if open(e) {
            p.sleepers.fetch_sub(1, SeqCst);
            return Some(e);
        }
        #[cfg(loom)]
        if p.shut_down.load(SeqCst) {
            p.sleepers.fetch_sub(1, SeqCst);
            return None;
        }
        g = p.wake.wait(g).unwrap_or_else(|e| e.into_inner());
    }
}

/// A mutable slice seen as `n` chunks of `size` elements (the last ones shorter, then
/// empty), for the iterations of a parallel loop: iteration `k` writes chunk `k` only.
pub struct ChunksMut<'a, T> {
    ptr: *mut T,
    len: usize,
    size: usize,
    _slice: PhantomData<&'a mut [T]>,
}

// SAFETY: a `ChunksMut` hands out `&mut` chunks that never overlap (the contract of
// `chunk`), so sharing it between threads is sharing disjoint `&mut [T]`s: sound when `T`
// may be sent to another thread.
unsafe impl<T: Send> Sync for ChunksMut<'_, T> {}
unsafe impl<T: Send> Send for ChunksMut<'_, T> {}

impl<'a, T> ChunksMut<'a, T> {
    /// `s` in chunks of `size` elements (at least 1).
    pub fn new(s: &'a mut [T], size: usize) -> Self {
        ChunksMut { ptr: s.as_mut_ptr(), len: s.len(), size: size.max(1), _slice: PhantomData }
    }

    /// Chunk `k`: elements `k * size .. (k + 1) * size` of the slice, cut at its end.
    ///
    /// # Safety
    /// No other chunk `k` obtained from this `ChunksMut` is alive: each `k` is asked for
    /// at most once while the chunks live ([`par_for`] passes each index to one call).
    #[inline(always)]
    pub unsafe fn chunk(&self, k: usize) -> &'a mut [T] {
        let start = k.saturating_mul(self.size).min(self.len);
        let end = start.saturating_add(self.size).min(self.len);
        // SAFETY: `start..end` lies inside the slice the pointer came from, which this
        // value borrows mutably for `'a`; the caller guarantees no other live reference to
        // these elements (chunks of different `k` do not overlap).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), end - start) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_index_runs_once_and_chunks_cover_the_slice() {
        for n in [1usize, 2, 3, 17, 1000, 4096] {
            let mut data = vec![0u32; n * 3 + 1];
            let chunks = ChunksMut::new(&mut data, 3);
            par_for(n, &|k| {
                // SAFETY: `par_for` passes each index once.
                for v in unsafe { chunks.chunk(k) } {
                    *v += k as u32 + 1;
                }
                Ok(())
            })
            .unwrap();
            for (i, v) in data.iter().enumerate() {
                let want = if i < n * 3 { (i / 3) as u32 + 1 } else { 0 };
                assert_eq!(*v, want, "n = {n}, element {i}");
            }
        }
    }

    #[test]
    fn the_first_error_is_returned_and_a_panic_reaches_the_caller() {
        let fail = |k: usize| Error::Internal { message: format!("iteration {k}") };
        let r = par_for(1000, &|k| if k == 500 { Err(fail(k)) } else { Ok(()) });
        assert!(matches!(r, Err(Error::Internal { message }) if message == "iteration 500"));
        let r = std::panic::catch_unwind(|| par_for(1000, &|k| if k == 7 { panic!("seven") } else { Ok(()) }));
        assert!(r.is_err());
        // An error and a panic in the same loop: whichever comes first is reported (the
        // error may stop the iteration that panics from running), and neither is left
        // for the next loop (its `unwrap` below).
        let r = std::panic::catch_unwind(|| {
            par_for(1000, &|k| match k {
                3 => Err(fail(k)),
                900 => panic!("nine hundred"),
                _ => Ok(()),
            })
        });
        assert!(r.is_err() || matches!(r, Ok(Err(_))));
        // The pool still works afterwards.
        let count = AtomicUsize::new(0);
        par_for(100, &|_| {
            count.fetch_add(1, Relaxed);
            Ok(())
        })
        .unwrap();
        assert_eq!(count.load(Relaxed), 100);
    }

    #[test]
    fn loops_from_many_threads_at_once_all_complete() {
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for round in 0..200 {
                        let mut data = vec![0usize; 64];
                        let chunks = ChunksMut::new(&mut data, 1);
                        par_for(64, &|k| {
                            // SAFETY: `par_for` passes each index once.
                            unsafe { chunks.chunk(k)[0] = k + t + round };
                            Ok(())
                        })
                        .unwrap();
                        assert!(data.iter().enumerate().all(|(k, v)| *v == k + t + round));
                    }
                });
            }
        });
    }

    #[test]
    fn a_chunk_past_the_end_is_empty() {
        let mut data = [1, 2, 3, 4, 5];
        let chunks = ChunksMut::new(&mut data, 2);
        // SAFETY: each index once.
        unsafe {
            assert_eq!(chunks.chunk(2), &mut [5]);
            assert!(chunks.chunk(3).is_empty());
            assert!(chunks.chunk(usize::MAX).is_empty());
        }
    }
}
