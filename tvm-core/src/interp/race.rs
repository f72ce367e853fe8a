//! Race detection. The iterations of a `parallel` loop, and the threads and blocks of a
//! kernel launch, are agents of a frame (a region whose agents run concurrently); every
//! access to memory another agent may touch is recorded per element in the frame's layer,
//! and two unordered accesses of which one writes are a race.

use super::error::{err, ErrorKind, R};
use super::exec::Machine;
use super::memory::Class;

/// Who accesses memory: an iteration of a parallel loop (group) or a GPU thread (group =
/// block, thread, phase = the barrier interval).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Agent {
    pub(super) group: i64,
    pub(super) thread: u32,
    pub(super) phase: u32,
}

/// Accesses by `a` and `b` (a first) are unordered: different groups never synchronize;
/// different threads of one group are ordered only by a barrier between them.
fn conflict(a: Agent, b: Agent) -> bool {
    a.group != b.group || (a.thread != b.thread && a.phase == b.phase)
}

/// The accesses to one element within one frame, summarized. Groups and, within a group,
/// phases only advance, so the last writer and at most three readers decide every future
/// conflict: `old`, a reader from an earlier group (it conflicts with everyone after), and
/// up to two readers of the latest phase of the current group.
#[derive(Clone, Copy, Default)]
struct Entry {
    w: Option<Agent>,
    old: Option<Agent>,
    cur: [Option<Agent>; 2],
}

impl Entry {
    /// Records a read; on a conflict, the earlier access and whether it was a write.
    fn read(&mut self, a: Agent) -> Result<(), (Agent, bool)> {
        if let Some(w) = self.w {
            if conflict(w, a) {
                return Err((w, true));
            }
        }
        match self.cur[0] {
            None => self.cur[0] = Some(a),
            Some(r0) => {
                if r0.group != a.group {
                    if self.old.is_none() {
                        self.old = Some(r0);
                    }
                    self.cur = [Some(a), None];
                } else if r0.phase != a.phase {
                    self.cur = [Some(a), None];
                } else if r0.thread != a.thread && self.cur[1].is_none() {
                    self.cur[1] = Some(a);
                }
            }
        }
        Ok(())
    }
    fn write(&mut self, a: Agent) -> Result<(), (Agent, bool)> {
        if let Some(w) = self.w {
            if conflict(w, a) {
                return Err((w, true));
            }
        }
        let check = |r: Option<Agent>| match r {
            Some(r) if conflict(r, a) => Err((r, false)),
            _ => Ok(()),
        };
        check(self.old)?;
        check(self.cur[0])?;
        check(self.cur[1])?;
        self.w = Some(a);
        Ok(())
    }
}

/// One frame's record of the accesses to a storage, an entry per element.
pub(super) struct Layer {
    frame: u64,
    entries: Vec<Entry>,
}

/// What runs concurrently in a frame.
pub(super) enum FrameKind {
    Parallel { var: String, min: i128 },
    Kernel { grid: [i64; 3] },
}

/// A region whose agents run concurrently: a parallel loop or a kernel launch.
pub(super) struct Frame {
    pub(super) serial: u64,
    pub(super) kind: FrameKind,
    pub(super) agent: Agent,
    /// Storages that got a layer for this frame.
    pub(super) touched: Vec<usize>,
}

fn race_message(
    kind: &FrameKind,
    scope: &str,
    name: &str,
    i: usize,
    prev: (Agent, bool),
    now: (Agent, bool),
) -> String {
    let verb = |w: bool| if w { "wrote" } else { "read" };
    let ((p, pw), (n, nw)) = (prev, now);
    match kind {
        FrameKind::Parallel { var, min } => format!(
            "data race in parallel loop over `{var}`: buffer `{name}` element {i} is {} by iteration {var} = {} and {} by iteration {var} = {} (iterations must touch disjoint data)",
            if pw { "written" } else { "read" },
            min + p.group as i128,
            if nw { "written" } else { "read" },
            min + n.group as i128
        ),
        FrameKind::Kernel { grid } => {
            let block = |g: i64| {
                let (gx, gy) = (grid[0].max(1), grid[1].max(1));
                format!("({},{},{})", g % gx, (g / gx) % gy, g / (gx * gy))
            };
            if p.group == n.group {
                let of_block = if scope == "shared" { String::new() } else { format!(" of block {}", block(n.group)) };
                format!(
                    "race on {scope} buffer `{name}` element {i} between threads {} and {}{of_block}: missing barrier (thread {} {} it, then thread {} {} it in the same phase)",
                    p.thread,
                    n.thread,
                    p.thread,
                    verb(pw),
                    n.thread,
                    verb(nw)
                )
            } else {
                format!(
                    "race on {scope} buffer `{name}` element {i} between block {} (thread {}) and block {} (thread {}): the blocks of one launch cannot synchronize (block {} {} it, block {} {} it)",
                    block(p.group),
                    p.thread,
                    block(n.group),
                    n.thread,
                    block(p.group),
                    verb(pw),
                    block(n.group),
                    verb(nw)
                )
            }
        }
    }
}

impl<'p> Machine<'p> {
    /// Race detection: records the access in every concurrent region that shares `sid`.
    /// `write`: `None` for a read, else whether the write is silent (stores the value the
    /// element already holds).
    pub(super) fn track(&mut self, sid: usize, i: usize, write: Option<bool>) -> R<()> {
        let prog = self.prog;
        let global_races = self.opts.check_global_races;
        let Some(Some(st)) = self.stores.get_mut(sid) else { return Ok(()) };
        for f in self.frames.iter_mut() {
            let tracked = match f.kind {
                FrameKind::Parallel { .. } => st.epoch < f.serial,
                FrameKind::Kernel { .. } => {
                    write != Some(true) && (st.class == Class::Shared || (global_races && st.epoch < f.serial))
                }
            };
            if !tracked {
                continue;
            }
            let li = match st.layers.iter().position(|l| l.frame == f.serial) {
                Some(p) => p,
                None => {
                    st.layers.push(Layer { frame: f.serial, entries: vec![Entry::default(); st.data.len()] });
                    f.touched.push(sid);
                    st.layers.len() - 1
                }
            };
            let e = &mut st.layers[li].entries[i];
            let r = if write.is_some() { e.write(f.agent) } else { e.read(f.agent) };
            if let Err(prev) = r {
                let b = &prog.buffers[st.buf];
                let scope = if st.class == Class::Shared { "shared" } else { b.scope().name() };
                return err(
                    ErrorKind::Race,
                    race_message(&f.kind, scope, b.name(), i, prev, (f.agent, write.is_some())),
                );
            }
        }
        Ok(())
    }

    pub(super) fn push_frame(&mut self, kind: FrameKind) -> usize {
        self.epoch += 1;
        self.frames.push(Frame {
            serial: self.epoch,
            kind,
            agent: Agent { group: 0, thread: 0, phase: 0 },
            touched: Vec::new(),
        });
        self.frames.len() - 1
    }

    pub(super) fn pop_frame(&mut self) {
        if let Some(f) = self.frames.pop() {
            for sid in f.touched {
                if let Some(Some(st)) = self.stores.get_mut(sid) {
                    st.layers.retain(|l| l.frame != f.serial);
                }
            }
        }
    }

    pub(super) fn next_phase(&mut self) -> R<u32> {
        self.phase_counter = match self.phase_counter.checked_add(1) {
            Some(p) => p,
            None => return err(ErrorKind::InvalidProgram, "more than 2^32 barrier phases"),
        };
        Ok(self.phase_counter)
    }
}
