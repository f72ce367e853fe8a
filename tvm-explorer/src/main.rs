//! The pipeline explorer: `tvm-explorer FILE.rs... --out PAGE.html` runs the real
//! pipeline on every `compute!` of the files (for cpu, cuda, opencl and webgpu, whose
//! column also shows the MSL naga makes of the WGSL) and writes one
//! self-contained HTML page (inline CSS and JS, no network); `--text` prints the same
//! content to the terminal. See the README's "Pipeline explorer".

mod cost;
mod diff;
mod model;
mod page;

use std::collections::HashMap;
use std::process::ExitCode;

const USAGE: &str = "usage: tvm-explorer FILE.rs [FILE.rs ...] (--out PAGE.html | --text) [--dim NAME=VALUE ...]

Runs the real pipeline on every `compute!` of the files, for cpu, cuda, opencl and webgpu
(WGSL, and the MSL translated from it), and
writes one self-contained HTML page (--out) or prints the same content (--text).
--dim gives a dim a value for the cost view (trip counts, FLOPs and bytes as numbers).";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut files = Vec::new();
    let mut out = None;
    let mut text = false;
    let mut opts = model::Options { dims: HashMap::new() };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => match it.next() {
                Some(p) => out = Some(p),
                None => return usage("--out needs a file name"),
            },
            "--text" => text = true,
            "--dim" => {
                let Some(d) = it.next() else { return usage("--dim needs NAME=VALUE") };
                let Some((n, v)) = d.split_once('=') else {
                    return usage(&format!("--dim `{d}`: expected NAME=VALUE"));
                };
                let Ok(v) = v.parse::<i64>() else {
                    return usage(&format!("--dim `{d}`: the value is not an integer"));
                };
                opts.dims.insert(n.to_string(), v);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') => return usage(&format!("unknown option `{s}`")),
            _ => files.push(a),
        }
    }
    if files.is_empty() || (out.is_none() && !text) {
        return usage("give at least one file, and --out PAGE.html or --text");
    }
    let (data, texts) = match model::build(&files, &opts) {
        Ok(built) => built,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if text {
        print!("{}", page::text(&data, &texts));
    }
    if let Some(path) = out {
        let html = page::html(&data, &texts);
        if let Err(e) = std::fs::write(&path, &html) {
            eprintln!("error: cannot write `{path}`: {e}");
            return ExitCode::FAILURE;
        }
        let kernels = data["kernels"].as_array().map_or(0, |k| k.len());
        eprintln!("wrote {path}: {kernels} kernels, {} KB", html.len() / 1024);
    }
    ExitCode::SUCCESS
}

fn usage(why: &str) -> ExitCode {
    eprintln!("error: {why}\n\n{USAGE}");
    ExitCode::from(2)
}
