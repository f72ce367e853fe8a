use tvm_core::frontend::{build_schedule, parse_str};
use tvm_core::interp::{run, ArgValue, HostTensor};
use tvm_core::Target;

fn go(src: &str, target: Target, inputs: Vec<ArgValue>, out: &[usize]) {
    let k = parse_str(src).unwrap();
    let s = build_schedule(&k, &target).unwrap_or_else(|e| panic!("{:?}", e));
    let f = tvm_core::lower::lower(&s).unwrap();
    println!("{}", tvm_core::tir::printer::print_func(&f));
    let mut args = inputs;
    let n: usize = out.iter().product();
    args.push(ArgValue::Tensor(HostTensor::f32(out.to_vec(), vec![f32::NAN; n])));
    let r = run(&f, &mut args);
    println!("{:?}", r);
    println!("{:?}", args.last().unwrap());
}

#[test]
fn probe() {
    let src = r#"fn r(a: f32[M, K]) -> c: f32[M] { c[i] = sum(a[i, k] for k in 0..K); }
    schedule!(cpu) { let (ko, ki) = c.split(c.k, 4); let (kio, kii) = c.split(ki, 3); }"#;
    go(src, Target::cpu(), vec![ArgValue::Tensor(HostTensor::f32(vec![1, 8], vec![1.0; 8]))], &[1]);
    let src = r#"fn r(a: f32[M]) -> c: f32[M] { c[i] = a[i]; }
    schedule!(cpu) { let (io, ii) = c.split(c.i, 4); let (iio, iii) = c.split(ii, 3); c.parallel(io); }"#;
    go(src, Target::cpu(), vec![ArgValue::Tensor(HostTensor::f32(vec![8], vec![1.0; 8]))], &[8]);
}
