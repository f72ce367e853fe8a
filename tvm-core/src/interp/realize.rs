//! `Realize`: a region of a buffer, in its own dims. For a parameter it is a view of the
//! parameter's storage (checked to lie inside its shape); otherwise a fresh allocation of
//! the region, addressed relative to its mins.

use super::compile::CExpr;
use super::error::{err, ErrorKind, R};
use super::exec::{internal, Ctx, Machine};
use super::memory::{Binding, Class, View, MAX_ELEMENTS};
use std::rc::Rc;

impl<'p> Machine<'p> {
    /// The storage and binding of a `Realize`: a view of the parameter when the buffer is
    /// one, else a fresh allocation of the region.
    pub(super) fn realize(
        &mut self,
        ctx: &Ctx,
        buf: usize,
        bounds: &[(CExpr, CExpr)],
        class: Class,
    ) -> R<(Binding, Option<usize>)> {
        let mut dims = Vec::with_capacity(bounds.len());
        for (min, ext) in bounds {
            let m = self.eval_int(ctx, min)?;
            let e = self.eval_int(ctx, ext)?;
            if e < 0 {
                return err(
                    ErrorKind::InvalidProgram,
                    format!("realize of `{}` with negative extent {e}", self.buf_name(buf)),
                );
            }
            dims.push((m, e));
        }
        if self.prog.is_param[buf] {
            if let Some(Some(pb)) = ctx.bufs.get(buf) {
                let Some(pv) = &pb.view else { return internal("parameter without a shape") };
                if pv.dims.len() != dims.len() {
                    return err(
                        ErrorKind::InvalidProgram,
                        format!(
                            "realize of `{}` with {} dims; the parameter has {}",
                            self.buf_name(buf),
                            dims.len(),
                            pv.dims.len()
                        ),
                    );
                }
                for (d, (&(m, e), &(_, n))) in dims.iter().zip(&pv.dims).enumerate() {
                    if e > 0 && (m < 0 || m + e > n) {
                        return err(
                            ErrorKind::OutOfBounds,
                            format!(
                                "realize of `{}` over {m}..{} in dimension {d}, beyond its size {n}",
                                self.buf_name(buf),
                                m + e
                            ),
                        );
                    }
                }
                let view = View { dims, strides: pv.strides.clone(), base: pv.base };
                return Ok((Binding { sid: pb.sid, view: Some(Rc::new(view)), flat_ok: false }, None));
            }
        }
        let mut strides = vec![0i128; dims.len()];
        let mut n: i128 = 1;
        for d in (0..dims.len()).rev() {
            strides[d] = n;
            n = n.saturating_mul(dims[d].1).min(MAX_ELEMENTS + 1);
        }
        let base = -dims.iter().zip(&strides).map(|(&(m, _), &s)| m * s).sum::<i128>();
        let sid = self.alloc(buf, n, class)?;
        Ok((Binding { sid, view: Some(Rc::new(View { dims, strides, base })), flat_ok: false }, Some(sid)))
    }
}
