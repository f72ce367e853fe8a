tvm::compute! {
    pub fn sum_two_axes(x: f32[A, 4, 8]) -> s: f32[A] {
        s[i] = sum(x[i, j, k] for j in 0..4, k in 0..8);
    }
    schedule!(cpu) {
        let sl = s.cache_write(local);
        let (io, ii) = s.split(s.i, 4);
        s.parallel(io);
        sl.compute_at(s, ii);
        let (ko, ki) = sl.split(sl.k, 2);
        sl.reorder(sl.j, ko, ki);
        sl.unroll(ki);
    }
    schedule!(cuda) {
        s.bind(s.i, block.x);
        let jk = s.fuse(s.j, s.k);
        let (o, t) = s.split(jk, 24);
        s.bind(t, thread.x);
        let x_s = x.cache_read(shared, [s]);
        x_s.compute_at(s, s.i);
        let [xa, xb, xc] = x_s.axes();
        x_s.bind(xc, thread.x);
    }
}
