use tvm::compute;

// The help names only this kernel's names: no `j` exists here, so it suggests `x[i, 0]`
// (applied in tests/ui/pass/help_applied.rs).
compute! {
    pub fn first_column(x: f32[M, N]) -> y: f32[M] {
        y[i] = x[i];
    }
}

fn main() {}
