//! The bench crate the tuner builds for one kernel and target: every candidate to
//! measure as a kernel of its own (`__tvm_cN`, the kernel's tokens with the candidate's
//! knob values), the kernel with no schedule at all as the reference (`__tvm_reference`,
//! the compiler's default schedules, run on the CPU), and a `main` that runs one of them:
//!
//! ```text
//! BENCH reference 0 cpu DIR 0 0          writes DIR/reference.bin (every output as f64)
//! BENCH candidate N DEVICE DIR QUICK TOL checks candidate N's outputs against it, then
//!                                         times it on DEVICE with device-resident tensors
//! BENCH default 0 DEVICE DIR 0 TOL        the same for the default schedule (three runs)
//! ```
//!
//! A candidate prints `error E`, then `wrong` (E above TOL), or `quick S` (the median of
//! three runs) and `slow` (S above QUICK, the early drop), or `times MIN MEDIAN P20 P80`.
//! Inputs are the same pseudo-random values in every process (floats in [-1, 1), integers
//! in 0..4). `TVM_TUNE_FAULTS=N=wrong,M=crash,K=hang` makes candidate N's output wrong,
//! M abort and K hang: how the tuner's own tests give it candidates that must be rejected.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;
use tvm_core::expand::signature::{ParamKind, Signature};
use tvm_core::frontend::Kernel;

/// The kernel's tokens with every schedule block removed and the function named `name`.
pub fn reference_tokens(tokens: &TokenStream, name: &str) -> TokenStream {
    let renamed = tvm_core::tune::space::substitute(tokens, None, &[], name);
    let toks: Vec<TokenTree> = renamed.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let (TokenTree::Ident(id), Some(TokenTree::Punct(b)), Some(TokenTree::Group(_)), Some(TokenTree::Group(g))) =
            (&toks[i], toks.get(i + 1), toks.get(i + 2), toks.get(i + 3))
        {
            if id == "schedule" && b.as_char() == '!' && g.delimiter() == Delimiter::Brace {
                i += 4;
                continue;
            }
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out.into_iter().collect()
}

/// A shape or scalar value the bench needs that the tuner was not given.
#[derive(Debug)]
pub struct MissingDim(pub String);

/// The value of each shape dimension of `e` under `dims`.
fn dim_value(e: &tvm_core::tir::Expr, dims: &BTreeMap<String, i64>) -> Result<i64, MissingDim> {
    if let Some(v) = e.as_int() {
        return Ok(v);
    }
    match e.as_var() {
        Some(v) => dims.get(v.name()).copied().ok_or_else(|| MissingDim(v.name().to_string())),
        None => Err(MissingDim(tvm_core::tir::printer::print_expr(e))),
    }
}

/// Writes the bench crate into `dir`: `Cargo.toml` (depending on the `tvm` crate at
/// `tvm_root` with `features`), the lock file copied from `lock`, and `src/main.rs`.
/// Returns the line of `src/main.rs` that holds each candidate (`(line, candidate)`), by
/// which the errors of a candidate that does not compile are told apart.
pub fn write(
    dir: &Path,
    package: &str,
    tvm_root: &Path,
    features: &[&str],
    lock: &Path,
    kernel: &Kernel,
    reference: &TokenStream,
    candidates: &[(usize, TokenStream)],
    dims: &BTreeMap<String, i64>,
) -> Result<Vec<(usize, usize)>, String> {
    let (main, lines) =
        main_rs(kernel, reference, candidates, dims).map_err(|m| format!("no value for dim `{}`", m.0))?;
    std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
    let feats: Vec<String> = features.iter().map(|f| format!("{f:?}")).collect();
    let manifest = format!(
        "[package]\nname = {package:?}\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\ntvm = {{ package = \"tvm-rs\", path = {root:?}, default-features = false, features = [{feats}] }}\n\n\
         [workspace]\n\n[profile.release]\ndebug = false\n",
        root = tvm_root.to_string_lossy(),
        feats = feats.join(", "),
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).map_err(|e| e.to_string())?;
    if !dir.join("Cargo.lock").exists() {
        // The workspace's lock: every dependency of `tvm` at the version already built.
        let _ = std::fs::copy(lock, dir.join("Cargo.lock"));
    }
    let path = dir.join("src/main.rs");
    // Unchanged text keeps cargo's build fresh.
    if std::fs::read_to_string(&path).ok().as_deref() != Some(main.as_str()) {
        std::fs::write(&path, main).map_err(|e| e.to_string())?;
    }
    Ok(lines)
}

fn main_rs(
    kernel: &Kernel,
    reference: &TokenStream,
    candidates: &[(usize, TokenStream)],
    dims: &BTreeMap<String, i64>,
) -> Result<(String, Vec<(usize, usize)>), MissingDim> {
    let sig = Signature::of(kernel);
    let g = &kernel.graph;
    let mut s = String::new();
    s.push_str("#![allow(unused, non_snake_case, clippy::all)]\n//! Generated by tvm-tune.\n\n");
    let _ = writeln!(s, "tvm::compute! {{ {reference} }}\n");
    // Each candidate on one line (the tokens print without line breaks).
    let mut lines = Vec::new();
    for (n, ts) in candidates {
        lines.push((s.matches('\n').count() + 2, *n));
        let _ = writeln!(s, "// candidate {n}\ntvm::compute! {{ {ts} }}\n");
    }
    s.push_str(SUPPORT);

    // The inputs, as host tensors `p0..` and scalars.
    let mut inputs = String::new();
    let mut args = Vec::new();
    let mut dargs = Vec::new();
    let mut uploads = String::new();
    for (k, (p, info)) in g.params.iter().zip(&sig.params).enumerate() {
        match (&info.kind, p) {
            (ParamKind::Tensor { elem, rank }, tvm_core::te::Param::Tensor(t)) => {
                let tt = g.tensor(*t);
                let shape: Vec<String> =
                    tt.shape.iter().map(|e| dim_value(e, dims).map(|v| v.to_string())).collect::<Result<_, _>>()?;
                let int = !tt.dtype.is_float();
                let _ = writeln!(
                    inputs,
                    "    let p{k} = tvm::Tensor::<{elem}, {rank}>::from_vec(fill({k}, {len}, {int}), [{shape}])?;",
                    len = shape.join(" * "),
                    shape = shape.join(", "),
                );
                let _ = writeln!(uploads, "        let d{k} = p{k}.to_device(&dev)?;");
                args.push(format!("&p{k}"));
                dargs.push(format!("&d{k}"));
            }
            (ParamKind::Scalar { ty, is_usize }, tvm_core::te::Param::Scalar(v)) => {
                let value = if *is_usize {
                    dims.get(v.name()).copied().ok_or_else(|| MissingDim(v.name().to_string()))?.to_string()
                } else if v.dtype().is_float() {
                    format!("<{ty} as Val>::from_f64(0.5)")
                } else {
                    format!("<{ty} as Val>::from_f64(1.0)")
                };
                let _ = writeln!(inputs, "    let p{k}: {ty} = {value};");
                args.push(format!("p{k}"));
                dargs.push(format!("p{k}"));
            }
            _ => {}
        }
    }
    let nout = sig.outputs.len();
    let outs: Vec<String> = (0..nout).map(|k| format!("o{k}")).collect();
    let pat = if nout == 1 { outs[0].clone() } else { format!("({})", outs.join(", ")) };
    let mut_pat = if nout == 1 {
        format!("mut {}", outs[0])
    } else {
        format!("({})", outs.iter().map(|o| format!("mut {o}")).collect::<Vec<_>>().join(", "))
    };
    let flats: Vec<String> = outs.iter().map(|o| format!("flat(&{o})")).collect();
    let muts: Vec<String> = outs.iter().map(|o| format!("&mut {o}")).collect();
    let (args, dargs, flats, muts) = (args.join(", "), dargs.join(", "), flats.join(", "), muts.join(", "));
    let arms: String = candidates.iter().map(|(n, _)| format!("        {n} => bench!(__tvm_c{n}),\n")).collect();
    let _ = write!(
        s,
        r#"
fn main() {{
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 7 {{
        eprintln!("usage: BENCH reference|candidate N DEVICE DIR QUICK TOLERANCE");
        std::process::exit(2);
    }}
    let n: usize = a[2].parse().unwrap_or(usize::MAX);
    let dev: tvm::Device = match a[3].parse() {{
        Ok(d) => d,
        Err(e) => {{ eprintln!("{{e}}"); std::process::exit(2) }}
    }};
    let (quick, tol) = (a[5].parse::<f64>().unwrap_or(f64::INFINITY), a[6].parse::<f64>().unwrap_or(0.0));
    if let Err(e) = run(&a[1], n, dev, std::path::Path::new(&a[4]), quick, tol) {{
        eprintln!("{{e}}");
        std::process::exit(1);
    }}
}}

fn run(mode: &str, n: usize, dev: tvm::Device, dir: &std::path::Path, quick: f64, tol: f64) -> Result<(), tvm::Error> {{
{inputs}
    if mode == "reference" {{
        let {pat} = __tvm_reference::__call(&tvm::Device::Cpu, {args})?;
        write_reference(&dir.join("reference.bin"), &[{flats}]);
        return Ok(());
    }}
    let reference = read_reference(&dir.join("reference.bin"));
    fault(n, "crash");
    fault(n, "hang");
    macro_rules! bench {{
        ($k:ident) => {{{{
            let {pat} = $k::__call(&dev, {args})?;
            let mut outs = vec![{flats}];
            if fault(n, "wrong") {{
                if let Some(x) = outs[0].first_mut() {{
                    *x += 1.0 + x.abs();
                }}
            }}
            let err = compare(&outs, &reference);
            println!("error {{err:e}}");
            if !(err <= tol) {{
                println!("wrong");
                return Ok(());
            }}
{uploads}
            let {mut_pat} = $k::call_on(&dev, {dargs})?;
            let mut once = || -> Result<(), tvm::Error> {{
                $k::run_on(&dev, {dargs}, {muts})?;
                dev.synchronize()
            }};
            once()?;
            let mut q = Vec::new();
            for _ in 0..3 {{
                let t = std::time::Instant::now();
                once()?;
                q.push(t.elapsed().as_secs_f64());
            }}
            q.sort_by(f64::total_cmp);
            println!("quick {{:e}}", q[1]);
            if q[1] > quick {{
                println!("slow");
                return Ok(());
            }}
            let p = tvm::__rt::profile("candidate", &dev, None, once)?;
            println!("times {{:e}} {{:e}} {{:e}} {{:e}}", p.min(), p.median(), p.p20(), p.p80());
            Ok(())
        }}}};
    }}
    if mode == "default" {{
        return bench!(__tvm_reference);
    }}
    match n {{
{arms}        _ => {{
            eprintln!("no candidate {{n}} in this bench");
            std::process::exit(2)
        }}
    }}
}}
"#
    );
    Ok((s, lines))
}

/// The bench's helpers (element conversions, inputs, the reference file, faults).
const SUPPORT: &str = r#"
trait Val: Copy {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}
macro_rules! val_as {
    ($($t:ty),*) => {$(
        impl Val for $t {
            fn from_f64(x: f64) -> Self { x as $t }
            fn to_f64(self) -> f64 { self as f64 }
        }
    )*};
}
val_as!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, usize);
impl Val for bool {
    fn from_f64(x: f64) -> Self { x >= 2.0 }
    fn to_f64(self) -> f64 { if self { 1.0 } else { 0.0 } }
}
impl Val for tvm::f16 {
    fn from_f64(x: f64) -> Self { tvm::f16::from_f64(x) }
    fn to_f64(self) -> f64 { tvm::f16::to_f64(self) }
}
impl Val for tvm::bf16 {
    fn from_f64(x: f64) -> Self { tvm::bf16::from_f64(x) }
    fn to_f64(self) -> f64 { tvm::bf16::to_f64(self) }
}

/// The same pseudo-random values in every process: floats in [-1, 1), integers in 0..4.
fn fill<T: Val>(seed: u64, n: usize, int: bool) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            T::from_f64(if int { (u * 4.0).floor() } else { u * 2.0 - 1.0 })
        })
        .collect()
}

fn flat<T: Val + tvm::Element, const R: usize>(t: &tvm::Tensor<T, R>) -> Vec<f64> {
    t.as_slice().iter().map(|x| x.to_f64()).collect()
}

fn write_reference(path: &std::path::Path, outs: &[Vec<f64>]) {
    let mut bytes = Vec::new();
    for o in outs {
        bytes.extend((o.len() as u64).to_le_bytes());
        for x in o {
            bytes.extend(x.to_le_bytes());
        }
    }
    if let Err(e) = std::fs::write(path, bytes) {
        eprintln!("cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
}

fn read_reference(path: &std::path::Path) -> Vec<Vec<f64>> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8])) as usize;
        at += 8;
        let end = (at + len * 8).min(bytes.len());
        out.push(bytes[at..end].chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect());
        at = end;
    }
    out
}

/// The largest difference from the reference over the largest reference magnitude (for
/// integer and boolean outputs, any difference counts); infinite when the shapes differ
/// or a value is not a number where the reference's is.
fn compare(outs: &[Vec<f64>], reference: &[Vec<f64>]) -> f64 {
    if outs.len() != reference.len() {
        return f64::INFINITY;
    }
    let mut worst = 0.0f64;
    for (o, r) in outs.iter().zip(reference) {
        if o.len() != r.len() {
            return f64::INFINITY;
        }
        let scale = r.iter().fold(0.0f64, |m, x| if x.is_finite() { m.max(x.abs()) } else { m }).max(1e-30);
        for (a, b) in o.iter().zip(r) {
            let d = if a == b { 0.0 } else if a.is_nan() || b.is_nan() { f64::INFINITY } else { (a - b).abs() / scale };
            worst = worst.max(d);
        }
    }
    worst
}

/// Whether `TVM_TUNE_FAULTS` asks candidate `n` for `what`; a crash or hang happens here.
fn fault(n: usize, what: &str) -> bool {
    let spec = std::env::var("TVM_TUNE_FAULTS").unwrap_or_default();
    let hit = spec.split(',').any(|f| f.trim() == format!("{n}={what}"));
    if hit && what == "crash" {
        std::process::abort();
    }
    if hit && what == "hang" {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
    hit
}
"#;
