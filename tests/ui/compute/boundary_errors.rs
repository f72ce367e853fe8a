use tvm::compute;

compute! {
    pub fn blur(x: f32[n], s: f32) -> (y: f32[n], z: f32[n]) {
        let xb = constant_exterior(x, 0);
        let xs = repeat_edge(s);
        let yb = repeat_edge(y);
        let x = mirror_image(x);
        y[i] = xb[i - 1] + xb;
        z[i] = y[i];
        let late = repeat_image(x);
    }
}

fn main() {}
