tvm::compute! {
    pub fn transpose(a: f32[M, N]) -> b: f32[N, M] {
        b[i, j] = a[j, i];
    }
    schedule!(cpu) {
        let (io, jo, ii, ji) = b.tile(b.i, b.j, 4, 4);
        b.parallel(io);
        b.unroll(ii);
        b.vectorize(ji);
    }
    schedule!(cuda) {
        let (bi, bj, ti, tj) = b.tile(b.i, b.j, 8, 8);
        b.bind(bi, block.y);
        b.bind(bj, block.x);
        b.bind(ti, thread.y);
        b.bind(tj, thread.x);
        let a_s = a.cache_read(shared, [b]);
        a_s.compute_at(b, bj);
        let [ay, ax] = a_s.axes();
        a_s.bind(ay, thread.y);
        a_s.bind(ax, thread.x);
    }
}
