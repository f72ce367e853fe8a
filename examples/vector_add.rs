//! Vector add: the first kernel of the language reference, checked against a plain loop.

use tvm::{compute, Tensor};

compute! {
    /// c[i] = a[i] + b[i]
    pub fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] {
        c[i] = a[i] + b[i];
    }

    schedule!(cuda) {
        let (bx, tx) = c.split(c.i, 256);
        c.bind(bx, block.x);
        c.bind(tx, thread.x);
    }

    schedule!(cpu) {
        let (o, v) = c.split(c.i, 16);
        c.parallel(o);
        c.vectorize(v);
    }
}

fn main() -> Result<(), tvm::Error> {
    let a = Tensor::from_vec(vec![1.0f32; 1000], [1000])?;
    let b = Tensor::from_vec(vec![2.0f32; 1000], [1000])?;
    let c = vector_add(&a, &b)?; // runs on tvm::Device::default()
    assert_eq!(c.shape(), [1000]);
    assert!(c.as_slice().iter().all(|&x| x == 3.0));
    println!("vector_add: ok");
    Ok(())
}
