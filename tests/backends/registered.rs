//! The registry's kernels (`tvm-core/tests/support/registry.rs`) on every backend: each
//! registered file compiled by `compute!` in a module of its own, and one test per file
//! that runs every case of each of its kernels through the generated `run` on every
//! backend, comparing each output with the case's reference within the case's tolerance
//! (a kernel WGSL cannot express must fail on a WebGPU device with the documented error).
//!
//! The generated `run` takes typed tensors and scalars; a case holds untyped ones
//! ([`Arg`], [`Want`]). Each argument is converted to the type `run` asks for ([`FromArg`],
//! the type inferred from the call), and each output is made poisoned of the type `run`
//! writes ([`Output`]).

use super::{backends, Source};
use crate::registry::{check_output, Arg, Data, Want};
use std::any::Any;
use std::cell::OnceCell;
use tvm::{Element, Tensor};

/// An element type of the registry's tensors.
pub trait RegistryElement: Element {
    /// The elements of `d`, if they are of this type.
    fn of(d: &Data) -> Option<&[Self]>;
    /// As the registry's elements.
    fn data(v: &[Self]) -> Data;
    /// The value an output starts as: one the kernels never compute.
    const POISON: Self;
}

macro_rules! registry_element {
    ($($t:ty => $var:ident, $poison:expr;)*) => {$(
        impl RegistryElement for $t {
            fn of(d: &Data) -> Option<&[$t]> {
                match d {
                    Data::$var(v) => Some(v),
                    _ => None,
                }
            }
            fn data(v: &[$t]) -> Data {
                Data::$var(v.to_vec())
            }
            const POISON: $t = $poison;
        }
    )*};
}
registry_element! {
    f32 => F32, f32::NAN;
    f64 => F64, f64::NAN;
    i32 => I32, i32::MIN;
    i64 => I64, i64::MIN;
}

/// A case's argument, with the typed tensor made from it at its first use (and reused on
/// every backend).
pub struct Prepared {
    arg: Arg,
    tensor: OnceCell<Box<dyn Any>>,
}

/// A value of a generated `run`'s parameter type, made from a case's argument.
pub trait FromArg<'a>: Sized {
    fn from_arg(p: &'a Prepared, what: &str) -> Self;
}

impl<'a, E: RegistryElement, const R: usize> FromArg<'a> for &'a Tensor<E, R> {
    fn from_arg(p: &'a Prepared, what: &str) -> Self {
        let made = p.tensor.get_or_init(|| {
            let Arg::Tensor { shape, data } = &p.arg else { panic!("{what}: a scalar where `run` takes a tensor") };
            let shape: [usize; R] = shape.clone().try_into().unwrap_or_else(|_| panic!("{what}: not of rank {R}"));
            let data = E::of(data).unwrap_or_else(|| panic!("{what}: not of {}", std::any::type_name::<E>()));
            Box::new(Tensor::<E, R>::from_vec(data.to_vec(), shape).expect("the data fits the shape"))
        });
        made.downcast_ref().unwrap_or_else(|| panic!("{what}: asked for two types"))
    }
}

impl FromArg<'_> for f32 {
    fn from_arg(p: &Prepared, what: &str) -> f32 {
        match p.arg {
            Arg::F32(v) => v,
            _ => panic!("{what}: `run` takes an f32 scalar"),
        }
    }
}

impl FromArg<'_> for f64 {
    fn from_arg(p: &Prepared, what: &str) -> f64 {
        match p.arg {
            Arg::F64(v) => v,
            _ => panic!("{what}: `run` takes an f64 scalar"),
        }
    }
}

/// An output of a generated `run`: made poisoned, and checked against the case's.
pub trait Output: Sized {
    fn poisoned(w: &Want) -> Self;
    fn check(&self, w: &Want, what: &str);
}

impl<E: RegistryElement, const R: usize> Output for Tensor<E, R> {
    fn poisoned(w: &Want) -> Self {
        let shape: [usize; R] = w.shape.clone().try_into().unwrap_or_else(|_| panic!("an output of rank {R}"));
        Tensor::full(shape, E::POISON)
    }
    fn check(&self, w: &Want, what: &str) {
        check_output(&E::data(self.as_slice()), w, what)
    }
}

/// The `i`th of `items`, named `name` in a failure.
fn nth<'a, T>(items: &'a [T], i: &mut usize, what: &str, name: &str) -> &'a T {
    let item = items.get(*i).unwrap_or_else(|| panic!("{what}: no value for `{name}`"));
    *i += 1;
    item
}

macro_rules! backend_tests {
    ($( $key:ident $path:literal {
        $( $function:ident $(::<$ty:ident>)? ( $($param:ident),* ) -> ( $($out:ident),+ ) $cases:ident ; )+
    } )*) => {
        $(
            #[allow(dead_code)] // the typed functions; the tests call `run`
            #[path = $path]
            pub mod $key;
        )*

        /// One test per registered file: every case of each kernel on every backend.
        mod on_every_backend {
            use super::*;
            $(
                #[test]
                fn $key() {
                    $(
                        let label = concat!(stringify!($key), "::", stringify!($function) $(, "::<", stringify!($ty), ">")?);
                        let cases = crate::registry::cases::$cases(crate::registry::Suite::Backends);
                        assert!(!cases.is_empty(), "{label}: no cases");
                        for case in cases {
                            let args: Vec<Prepared> =
                                case.args.into_iter().map(|arg| Prepared { arg, tensor: OnceCell::new() }).collect();
                            let lacks = crate::NOT_ON_WEBGPU.iter().find(|(n, _)| *n == label).map(|(_, ty)| *ty);
                            for d in backends() {
                                let what = format!("{label} {} on {d}", case.what);
                                let (mut i, mut o) = (0, 0);
                                $( let mut $out = Output::poisoned(nth(&case.wants, &mut o, &what, stringify!($out))); )+
                                let r = super::$key::$function::run $(::<$ty>)? (
                                    d,
                                    $( FromArg::from_arg(nth(&args, &mut i, &what, stringify!($param)), &what), )*
                                    $( &mut $out ),+
                                );
                                if !crate::ran(d, &what, lacks, r) {
                                    continue;
                                }
                                assert_eq!((i, o), (args.len(), case.wants.len()), "{what}: arguments and outputs");
                                let mut o = 0;
                                $( $out.check(nth(&case.wants, &mut o, &what, stringify!($out)), &format!("{what}: `{}`", stringify!($out))); )+
                            }
                        }
                    )+
                }
            )*
        }

        /// Every registered kernel, by label, with its `source` function.
        pub fn sources() -> Vec<(&'static str, Source)> {
            vec![$($(
                (
                    concat!(stringify!($key), "::", stringify!($function) $(, "::<", stringify!($ty), ">")?),
                    $key::$function::source $(::<$ty>)?,
                ),
            )+)*]
        }
    };
}
for_each_kernel!(backend_tests);

/// Every registered kernel has an OpenCL program with its kernels (built on every OpenCL
/// device by `opencl_programs_build_without_warnings`).
#[cfg(feature = "opencl")]
#[test]
fn every_kernel_has_an_opencl_program() {
    for (name, source) in sources() {
        let text = source("opencl").unwrap_or_else(|e| panic!("{name}: no OpenCL source: {e}"));
        assert!(text.contains("__kernel"), "{name}: no kernel in the OpenCL program:\n{text}");
    }
}
