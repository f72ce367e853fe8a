use tvm::compute;

// Schedules whose threads would race are compile errors at the primitive that causes
// them (docs/LANGUAGE.md).
compute! {
    pub fn row_sums(x: f32[64, 64]) -> y: f32[64, 64] {
        let s[i]: f32[64] = sum(x[i, k] for k in 0..64);
        y[i, j] = x[i, j] / s[i];
    }
    schedule!(cuda) {
        y.bind(y.i, block.x);
        y.bind(y.j, thread.x);
        // Every thread of the block would accumulate into the shared `s`.
        s.compute_at(y, y.i);
    }
}

compute! {
    pub fn transpose(x: f32[64, 64]) -> y: f32[64, 64] {
        y[i, j] = x[j, i];
    }
    schedule!(cuda) {
        let x_l = x.cache_read(local, [y]);
        y.bind(y.i, block.x);
        y.bind(y.j, thread.x);
        x_l.compute_at(y, y.i);
        // Each thread would hold one column of the tile; the others read it.
        x_l.bind(x_l.ax1, thread.x);
    }
}

fn main() {}
