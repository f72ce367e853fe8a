//! The pipeline explorer: `tvm-explorer FILE.rs... --out PAGE.html` runs the real
//! pipeline on every `compute!` of the files (for cpu, cuda, opencl and webgpu, whose
//! column also shows the MSL naga makes of the WGSL) and writes one
//! self-contained HTML page (inline CSS and JS, no network); `--text` prints the same
//! content to the terminal. See the README's "Pipeline explorer".

mod cost;
mod diff;
mod model;
mod page;

use clap::Parser;
use std::collections::HashMap;
use std::process::ExitCode;

/// Runs the real pipeline on every `compute!` of the files, for cpu, cuda, opencl and webgpu
/// (WGSL, and the MSL translated from it), and writes one self-contained HTML page (--out)
/// or prints the same content (--text).
#[derive(Parser, Debug)]
#[command(name = "tvm-explorer", version)]
#[command(group = clap::ArgGroup::new("output").required(true).multiple(true).args(["out", "text"]))]
struct Args {
    /// The Rust files whose `compute!` kernels to show
    #[arg(value_name = "FILE.rs", required = true)]
    files: Vec<String>,

    /// Write the page here
    #[arg(long, value_name = "PAGE.html")]
    out: Option<String>,

    /// Print the page's content to the terminal
    #[arg(long)]
    text: bool,

    /// Give a dim a value for the cost view (trip counts, FLOPs and bytes as numbers);
    /// repeatable
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim)]
    dims: Vec<(String, i64)>,

    /// Only the kernel of this name (repeatable); the others of the files are not run
    #[arg(long = "kernel", value_name = "NAME")]
    kernels: Vec<String>,
}

fn parse_dim(s: &str) -> Result<(String, i64), String> {
    let (n, v) = s.split_once('=').ok_or(format!("`{s}`: expected NAME=VALUE"))?;
    let v = v.parse::<i64>().map_err(|_| format!("`{s}`: the value is not an integer"))?;
    Ok((n.to_string(), v))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opts = model::Options { dims: args.dims.into_iter().collect::<HashMap<_, _>>(), kernels: args.kernels };
    let (files, text, out) = (args.files, args.text, args.out);
    let (data, texts) = match model::build(&files, &opts) {
        Ok(built) => built,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if text {
        use std::io::Write;
        // A reader that stops early (`| head`) closes the pipe: the output ends there.
        if let Err(e) = std::io::stdout().write_all(page::text(&data, &texts).as_bytes()) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                eprintln!("error: cannot write the text: {e}");
                return ExitCode::FAILURE;
            }
        }
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
