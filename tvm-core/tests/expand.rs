//! What `compute!` expands to (`tvm_core::expand`): the host code of a GPU target as Rust
//! (goldens, bless with `UPDATE_EXPECT=1`), the static kernel descriptions, and
//! properties of the whole expansion: it parses, names only `::tvm::` runtime paths,
//! lowers nothing at run time, is deterministic, and keeps a code generator's error.

#[path = "support/lowered.rs"]
mod lowered;
#[path = "support/registry.rs"]
mod registry;
#[path = "support/rustfmt.rs"]
mod rustfmt;

use expect_test::expect;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use rustfmt::pretty;
use tvm_core::codegen::host::{emit_host, kernel_infos, KernelInfo};
use tvm_core::driver::lower_for;
use tvm_core::frontend::parse_str;
use tvm_core::tir::PrimFunc;
use tvm_core::{DType, Target};
use tvm_runtime::gpu::ParamKind;

fn lower_opencl(src: &str) -> PrimFunc {
    let k = parse_str(src).unwrap_or_else(|e| panic!("{e:?}"));
    lower_for(&k, &Target::opencl()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn host(src: &str) -> String {
    let f = lower_opencl(src);
    pretty(&emit_host(&f, &format_ident!("__host_opencl"), &quote!(::tvm::__rt)).unwrap())
}

#[test]
fn host_code_of_one_launch() {
    expect![[r#"
        #[allow(unused_variables, unused_mut, unused_braces, unused_parens, non_snake_case, clippy::all)]
        fn __host_opencl(
            __m: &::tvm::__rt::gpu::Module,
            a: &::tvm::__rt::gpu::Buffer,
            b: &::tvm::__rt::gpu::Buffer,
            c: &::tvm::__rt::gpu::Buffer,
            n: i64,
        ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
            unsafe {
                __m.launch(
                    0,
                    [n.wrapping_add(31i64).wrapping_div(32i64), 1i64, 1i64],
                    [32i64, 1i64, 1i64],
                    &[
                        ::tvm::__rt::gpu::KernelArg::Buffer(a),
                        ::tvm::__rt::gpu::KernelArg::Buffer(c),
                        ::tvm::__rt::gpu::KernelArg::Buffer(b),
                        ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(n)),
                    ],
                )
            }?;
            ::core::result::Result::Ok(())
        }
    "#]]
    .assert_eq(&host(include_str!("corpus/vector_add.rs")));
}

/// A GPU schedule of softmax that computes its reductions as kernels of their own: the
/// host code allocates their results on the device and launches three kernels.
#[test]
fn host_code_with_device_intermediates() {
    let text = host(
        "fn softmax(x: f32[M, N]) -> y: f32[M, N] {
             let m[i]: f32[M] = max(x[i, j] for j in 0..N);
             let e[i, j]: f32[M, N] = exp(x[i, j] - m[i]);
             let s[i]: f32[M] = sum(e[i, j] for j in 0..N);
             y[i, j] = e[i, j] / s[i];
         }
         schedule!(opencl) {
             e.compute_inline();
             let (mb, mt) = m.split(m.i, 256);
             m.bind(mb, block.x);
             m.bind(mt, thread.x);
             let (sb, st) = s.split(s.i, 256);
             s.bind(sb, block.x);
             s.bind(st, thread.x);
             let f = y.fuse(y.i, y.j);
             let (yb, yt) = y.split(f, 256);
             y.bind(yb, block.x);
             y.bind(yt, thread.x);
         }",
    );
    expect![[r##"
        #[allow(unused_variables, unused_mut, unused_braces, unused_parens, non_snake_case, clippy::all)]
        fn __host_opencl(
            __m: &::tvm::__rt::gpu::Module,
            x: &::tvm::__rt::gpu::Buffer,
            y: &::tvm::__rt::gpu::Buffer,
            M: i64,
            N: i64,
        ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
            {
                let m = &__m.alloc("m", ::core::option::Option::Some(M), 4usize)?;
                unsafe {
                    __m.launch(
                        0,
                        [M.wrapping_add(255i64).wrapping_div(256i64), 1i64, 1i64],
                        [256i64, 1i64, 1i64],
                        &[
                            ::tvm::__rt::gpu::KernelArg::Buffer(m),
                            ::tvm::__rt::gpu::KernelArg::Buffer(x),
                            ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(M)),
                            ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(N)),
                        ],
                    )
                }?;
                {
                    let s = &__m.alloc("s", ::core::option::Option::Some(M), 4usize)?;
                    unsafe {
                        __m.launch(
                            1,
                            [M.wrapping_add(255i64).wrapping_div(256i64), 1i64, 1i64],
                            [256i64, 1i64, 1i64],
                            &[
                                ::tvm::__rt::gpu::KernelArg::Buffer(s),
                                ::tvm::__rt::gpu::KernelArg::Buffer(x),
                                ::tvm::__rt::gpu::KernelArg::Buffer(m),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(M)),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(N)),
                            ],
                        )
                    }?;
                    unsafe {
                        __m.launch(
                            2,
                            [M.wrapping_mul(N).wrapping_add(255i64).wrapping_div(256i64), 1i64, 1i64],
                            [256i64, 1i64, 1i64],
                            &[
                                ::tvm::__rt::gpu::KernelArg::Buffer(y),
                                ::tvm::__rt::gpu::KernelArg::Buffer(x),
                                ::tvm::__rt::gpu::KernelArg::Buffer(m),
                                ::tvm::__rt::gpu::KernelArg::Buffer(s),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(N)),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(M)),
                            ],
                        )
                    }?;
                }
            }
            ::core::result::Result::Ok(())
        }
    "##]]
    .assert_eq(&text);
}

/// Kernel descriptions: parameters in the kernel's order with their types, shared memory
/// from the kernel's allocations, and the block shape when it is constant.
#[test]
fn kernel_descriptions() {
    let f = lower_opencl(include_str!("corpus/matmul_64.rs"));
    let infos = kernel_infos(&f);
    let [KernelInfo { name, params, shared_bytes, block }] = infos.as_slice() else { panic!("{infos:?}") };
    assert_eq!(name, "matmul_kernel0");
    assert_eq!(*block, Some([16, 16, 1]));
    // Two 16x16 f32 tiles.
    assert_eq!(*shared_bytes, 2 * 16 * 16 * 4);
    let buffers = params.iter().filter(|p| matches!(p, ParamKind::Buffer(DType::F32))).count();
    assert_eq!(buffers, 3, "{params:?}");
    assert!(params.iter().all(|p| matches!(p, ParamKind::Buffer(_) | ParamKind::Scalar(DType::I64))), "{params:?}");
    // A block whose extent is a dim has no constant shape.
    let f = lower_opencl(
        "fn rows(x: f32[M, N]) -> y: f32[M, N] { y[i, j] = x[i, j]; }
         schedule!(opencl) { y.bind(y.i, block.x); y.bind(y.j, thread.x); }",
    );
    assert_eq!(kernel_infos(&f)[0].block, None);
}

fn expand(src: &str) -> TokenStream {
    tvm_core::expand::compute(src.parse().unwrap())
}

/// Every `compute!` of the registry's files expands to items that parse, with no
/// `compile_error!`, naming only the runtime through `::tvm::` and lowering nothing when
/// it runs.
#[test]
fn expansions_name_only_the_runtime() {
    let invocations =
        registry::FILES.iter().flat_map(|(key, _, text)| lowered::invocations(text).into_iter().map(move |t| (key, t)));
    for (file, inner) in invocations {
        let out = tvm_core::expand::compute(inner);
        syn::parse2::<syn::File>(out.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
        let text = out.to_string();
        assert!(!text.contains("compile_error"), "{file}: {text}");
        for banned in ["tvm_core", "tvm_runtime", "parse_str", "lower_for", "frontend"] {
            assert!(!text.contains(banned), "{file}: the expansion names `{banned}`");
        }
        // Absolute paths are the facade's, the core library's or std's.
        for (i, _) in text.match_indices(":: ") {
            let starts_path = i == 0
                || text[..i].ends_with(' ')
                    && !text[..i].trim_end().ends_with(|c: char| c.is_alphanumeric() || c == '>' || c == '_');
            if starts_path {
                let next = text[i + 3..].split(' ').next().unwrap_or("");
                assert!(matches!(next, "tvm" | "core" | "std"), "{file}: a path `::{next}`");
            }
        }
        assert!(text.contains("static __OPENCL : :: tvm :: __rt :: gpu :: Program"), "{file}");
        assert!(text.contains("fn __host_opencl"), "{file}");
    }
}

#[test]
fn expansion_is_deterministic() {
    for (_, _, text) in registry::FILES.iter().take(6) {
        let inner = || lowered::invocations(text).remove(0);
        assert_eq!(tvm_core::expand::compute(inner()).to_string(), tvm_core::expand::compute(inner()).to_string());
    }
}

/// When the OpenCL code generator fails, `source("opencl")` and every OpenCL launch
/// return its message as `CompilationFailed`, and nothing of OpenCL is emitted; the rest
/// of the kernel is unaffected.
#[test]
fn opencl_codegen_failure_keeps_its_message() {
    const SRC: &str = "fn vector_add(a: f32[n], b: f32[n]) -> c: f32[n] { c[i] = a[i] + b[i]; }";
    let kernel = tvm_core::frontend::parse_kernel(SRC.parse().unwrap()).unwrap_or_else(|_| panic!("parses"));
    let ok = expand(SRC).to_string();
    assert!(ok.contains("__host_opencl") && !ok.contains("CompilationFailed"), "{ok}");
    let mut lowered = tvm_core::expand::lower_all(&kernel).unwrap_or_else(|_| panic!("lowers"));
    // A kernel launch inside a kernel, which the OpenCL code generator rejects.
    lowered.opencl.as_mut().unwrap().kernels[0].body = tvm_core::tir::Stmt::Launch { kernel: 0 };
    let message = tvm_core::codegen::opencl::emit_opencl(lowered.opencl.as_ref().unwrap()).unwrap_err().to_string();
    let bad = tvm_core::expand::expand_lowered(&kernel, &lowered).unwrap_or_else(|_| panic!("expands"));
    syn::parse2::<syn::File>(bad.clone()).expect("the expansion parses as items");
    let bad = bad.to_string();
    let failed = format!("CompilationFailed {{ target : \"opencl\" . into () , log : {message:?} . into () }}");
    // `source("opencl")`, `run`'s and `run_on`'s OpenCL arms.
    assert_eq!(bad.matches(&failed).count(), 3, "{failed}\n---\n{bad}");
    assert!(!bad.contains("__host_opencl") && !bad.contains("__OPENCL"), "{bad}");
}

/// A host loop around a launch (an outer axis bound to nothing), and an output dim bound
/// by a `usize` scalar (a dim of the host function, checked against the scalar by the
/// caller).
#[test]
fn host_code_with_a_loop_around_a_launch() {
    let text = host(
        "fn tiles(x: f32[n], m: usize) -> y: f32[m] { y[i] = x[i % n] * 2.0; }
         schedule!(opencl) { let (o, t) = y.split(y.i, 64); y.bind(t, thread.x); }",
    );
    expect![[r##"
        #[allow(unused_variables, unused_mut, unused_braces, unused_parens, non_snake_case, clippy::all)]
        fn __host_opencl(
            __m: &::tvm::__rt::gpu::Module,
            x: &::tvm::__rt::gpu::Buffer,
            m: u64,
            y: &::tvm::__rt::gpu::Buffer,
            n: i64,
            m_1: i64,
        ) -> ::core::result::Result<(), ::tvm::__rt::Error> {
            let __fault = &__m.fault_buffer()?;
            {
                let (__lo, __n): (i64, i64) = (0i64, m_1.wrapping_add(63i64).wrapping_div(64i64));
                let mut __k: i64 = 0;
                while __k < __n {
                    let o: i64 = __lo.wrapping_add(__k);
                    unsafe {
                        __m.launch(
                            0,
                            [1i64, 1i64, 1i64],
                            [64i64, 1i64, 1i64],
                            &[
                                ::tvm::__rt::gpu::KernelArg::Buffer(y),
                                ::tvm::__rt::gpu::KernelArg::Buffer(x),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(o)),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(m_1)),
                                ::tvm::__rt::gpu::KernelArg::Scalar(::tvm::__rt::gpu::Scalar::I64(n)),
                                ::tvm::__rt::gpu::KernelArg::Buffer(__fault),
                            ],
                        )
                    }?;
                    __k += 1;
                }
            }
            if let ::core::option::Option::Some(__f) = __m.read_fault(__fault)? {
                const __SITES: &[::tvm::__rt::CheckSite] = &[
                    ::tvm::__rt::CheckSite::Divisor { divisor: "n" },
                    ::tvm::__rt::CheckSite::Index { tensor: "x", dim: 0usize, index: "i % n" },
                ];
                return ::core::result::Result::Err(::tvm::__rt::check_failed("tiles", __SITES, __f));
            }
            ::core::result::Result::Ok(())
        }
    "##]]
    .assert_eq(&text);
}

/// A dim that only an intermediate uses, bound by a `usize` scalar: a host `let` from the
/// scalar, which the host code keeps.
#[test]
fn host_code_with_a_let() {
    let text = host(
        "fn sums(x: f32[n], m: usize) -> y: f32[n] {
             let t[j]: f32[m] = sum(x[i] * (j as f32) for i in 0..n);
             y[i] = x[i] + t[i % m];
         }",
    );
    assert!(text.contains("let m_1: i64 = (m as i64);"), "{text}");
    assert!(text.contains("let t = &__m.alloc(\"t\", ::core::option::Option::Some(m_1), 4usize)?;"), "{text}");
}

/// The expansion cache: a second expansion of the same tokens is read from its entry and
/// equals the first, with the user's spans on the signature's identifiers; a damaged
/// entry is a miss (and rewritten); `TVM_EXPANSION_CACHE=off` reads and writes nothing.
/// (One test: it sets an environment variable.)
#[test]
fn unchanged_kernels_come_from_the_expansion_cache() {
    use tvm_core::expand::{cache, compute_for, Backends};
    // A kernel of its own (a fresh key whatever ran before), on line 2 of its text.
    let nonce = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let src = format!("\n    pub fn scaled_{nonce}(x: f32[n], alpha: f32) -> y: f32[n] {{ y[i] = alpha * x[i]; }}");
    let tokens: proc_macro2::TokenStream = src.parse().unwrap();
    let backends = Backends { cuda: false, opencl: true, webgpu: false };
    let key = cache::key(&tokens, backends, None);
    let entry = cache::path(&key).expect("the cache is on");
    assert!(!entry.exists());
    let first = compute_for(tokens.clone(), backends);
    let stored = std::fs::read_to_string(&entry).expect("a successful expansion is stored");
    assert!(stored.starts_with("tvm-rs expansion v1 "), "{}", &stored[..80]);
    // A hit: same tokens, and the kernel's name keeps its line and column.
    // Marked (the same tokens and length, one space moved) to tell a read from a rewrite.
    assert!(stored.contains("\"cpu\" => :: core"));
    std::fs::write(&entry, stored.replacen("\"cpu\" => :: core", "\"cpu\"  => ::core", 1)).unwrap();
    let second = compute_for(tokens.clone(), backends);
    assert_eq!(first.to_string(), second.to_string());
    let name = format!("scaled_{nonce}");
    let spans: Vec<_> = ident_spans(&second, &name);
    assert!(spans.len() >= 3, "the function, its module and calls");
    for s in &spans {
        assert_eq!((s.start().line, s.start().column), (2, 11), "`{name}` keeps the user's span");
    }
    // It was a hit: the marked entry was read, not written again.
    assert!(std::fs::read_to_string(&entry).unwrap().contains("\"cpu\"  => ::core"));
    // A damaged entry is a miss, and is written again whole.
    std::fs::write(&entry, &stored[..stored.len() / 2]).unwrap();
    assert_eq!(compute_for(tokens.clone(), backends).to_string(), first.to_string());
    assert_eq!(std::fs::read_to_string(&entry).unwrap(), stored);
    // Off: nothing read, nothing written.
    std::fs::remove_file(&entry).unwrap();
    std::env::set_var("TVM_EXPANSION_CACHE", "off");
    assert!(cache::path(&key).is_none());
    assert_eq!(compute_for(tokens.clone(), backends).to_string(), first.to_string());
    std::env::remove_var("TVM_EXPANSION_CACHE");
    assert!(!entry.exists());
    // A kernel with a parameter `device` (the generated functions' own `device` is hygienic,
    // which text cannot keep apart) is not cached.
    let src = format!("pub fn shifted_{nonce}(x: f32[n], device: f32[n]) -> y: f32[n] {{ y[i] = x[i] + device[i]; }}");
    let dev_tokens: proc_macro2::TokenStream = src.parse().unwrap();
    let out = compute_for(dev_tokens.clone(), backends).to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(!cache::path(&cache::key(&dev_tokens, backends, None)).unwrap().exists());
    // The backends are part of the key.
    assert_ne!(cache::key(&tokens, Backends::ALL, None), key);
}

fn ident_spans(ts: &proc_macro2::TokenStream, name: &str) -> Vec<proc_macro2::Span> {
    let mut out = Vec::new();
    for tt in ts.clone() {
        match tt {
            proc_macro2::TokenTree::Ident(i) if i == name => out.push(i.span()),
            proc_macro2::TokenTree::Group(g) => out.extend(ident_spans(&g.stream(), name)),
            _ => {}
        }
    }
    out
}

/// The `///` lines of the item `fn NAME` at the top of an expansion.
fn fn_docs(file: &syn::File, name: &str) -> String {
    let f = file
        .items
        .iter()
        .find_map(|it| match it {
            syn::Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no `fn {name}` in the expansion"));
    tvm_core::frontend::doc_lines(&f.attrs).join("\n")
}

/// The typed function's rustdoc states each tensor's element type and shape (rustdoc
/// shows only `&Tensor<f32, 2>`), where the dims come from, and what the module's other
/// entry points are; a generic kernel's says the same with its type parameter.
#[test]
fn the_typed_function_documents_its_shapes() {
    let out = expand(
        "/// y = gelu(x + b)
         pub fn bias_gelu(x: f32[M, N], b: f32[N], alpha: f32) -> y: f32[M, N] { y[i, j] = (x[i, j] + b[j]) * alpha; }",
    );
    let file = syn::parse2::<syn::File>(out).unwrap();
    let doc = fn_docs(&file, "bias_gelu");
    assert!(doc.starts_with(" y = gelu(x + b)"), "the user's line comes first: {doc}");
    for want in [
        "`bias_gelu(x: f32[M, N], b: f32[N], alpha: f32) -> y: f32[M, N]`",
        "- `x: f32[M, N]`",
        "- `b: f32[N]`",
        "- returns `y: f32[M, N]`",
        "The dims `M`, `N` are the inputs' sizes",
        "`run`",
        "`call_on`",
        "`profile`",
    ] {
        assert!(doc.contains(want), "missing {want:?} in:\n{doc}");
    }

    assert!(mod_docs(&file, "bias_gelu").contains("[`bias_gelu`](fn@bias_gelu)"), "{}", mod_docs(&file, "bias_gelu"));
    no_bare_links(&file, "bias_gelu");

    let out = expand("pub fn clamp_any<T: Signed>(x: T[n], lo: T, hi: T) -> y: T[n] { y[i] = x[i].clamp(lo, hi); }");
    let file = syn::parse2::<syn::File>(out).unwrap();
    let doc = fn_docs(&file, "clamp_any");
    assert!(doc.contains("`clamp_any<T: clamp_any::Elem>(x: T[n], lo: T, hi: T) -> y: T[n]`"), "{doc}");
    no_bare_links(&file, "clamp_any");
}

/// The outer `///` lines of the module `mod NAME` at the top of an expansion.
fn mod_docs(file: &syn::File, name: &str) -> String {
    let m = file
        .items
        .iter()
        .find_map(|it| match it {
            syn::Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no `mod {name}` in the expansion"));
    tvm_core::frontend::doc_lines(&m.attrs).join("\n")
}

/// Every link in the docs of the function and the module `NAME` names its target: in a
/// user's crate the function and the module share the name where the module's doc is
/// resolved, so a bare [`NAME`] is ambiguous, and rustdoc shows the brackets as written
/// without a warning (the doc comes from a macro of another crate).
fn no_bare_links(file: &syn::File, name: &str) {
    for doc in [fn_docs(file, name), mod_docs(file, name)] {
        let bare: Vec<&str> =
            doc.match_indices("`]").map(|(at, _)| &doc[at..]).filter(|r| !r[2..].starts_with('(')).collect();
        assert!(bare.is_empty(), "a link without a target in:\n{doc}");
    }
}

/// `source("cpu")` is formatted Rust (prettyplease's layout), not a token stream's text.
#[test]
fn the_cpu_source_is_formatted() {
    let out = expand("pub fn scale(x: f32[M, N], a: f32) -> y: f32[M, N] { y[i, j] = x[i, j] * a; }");
    let mut sources = Vec::new();
    let mut visit = |lit: &syn::LitStr| {
        let s = lit.value();
        if s.contains("fn ") && s.contains("for ") {
            sources.push(s);
        }
    };
    struct Strings<'a, F: FnMut(&syn::LitStr)>(&'a mut F);
    impl<'ast, F: FnMut(&syn::LitStr)> syn::visit::Visit<'ast> for Strings<'_, F> {
        fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
            (self.0)(lit)
        }
    }
    syn::visit::Visit::visit_file(&mut Strings(&mut visit), &syn::parse2::<syn::File>(out).unwrap());
    let cpu: Vec<&String> = sources.iter().filter(|s| !s.contains("__kernel") && !s.contains("__global__")).collect();
    assert_eq!(cpu.len(), 1, "one CPU source among {sources:#?}");
    let src = cpu[0];
    assert!(!src.contains(" :: ") && !src.contains(" ;"), "unformatted: {src}");
    assert!(src.lines().count() > 5 && src.lines().any(|l| l.starts_with("        ")), "not laid out: {src}");
    let again = prettyplease::unparse(&syn::parse_file(src).unwrap());
    assert_eq!(&again, src, "not prettyplease's layout");
}

/// The linear layout that `source("cpu")` uses for the largest functions reads back as
/// the very tokens emitted, with a line for every statement, for the CPU function of every
/// kernel of the registry's files and of the face detector's; and the largest of them
/// (MTCNN's unrolled layers) get it.
#[test]
fn large_cpu_sources_are_laid_out_as_the_same_tokens() {
    use tvm_core::codegen::rust::layout::layout;
    /// The `;` of statements: at the top level or directly in a block (not `[0f32; 16]`).
    fn statements(ts: &TokenStream, in_block: bool) -> usize {
        ts.clone()
            .into_iter()
            .map(|t| match t {
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ';' => usize::from(in_block),
                proc_macro2::TokenTree::Group(g) => {
                    statements(&g.stream(), g.delimiter() == proc_macro2::Delimiter::Brace)
                }
                _ => 0,
            })
            .sum()
    }
    /// The tokens as text, each punct with whether it is joined to a next punct.
    fn flat(ts: &TokenStream, out: &mut Vec<(String, bool)>) {
        let trees: Vec<_> = ts.clone().into_iter().collect();
        for (i, t) in trees.iter().enumerate() {
            match t {
                proc_macro2::TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::Brace => ("{", "}"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    out.push((open.to_string(), false));
                    flat(&g.stream(), out);
                    out.push((close.to_string(), false));
                }
                proc_macro2::TokenTree::Punct(p) => {
                    let before_punct = matches!(trees.get(i + 1), Some(proc_macro2::TokenTree::Punct(_)));
                    out.push((p.to_string(), before_punct && p.spacing() == proc_macro2::Spacing::Joint))
                }
                t => out.push((t.to_string(), false)),
            }
        }
    }
    /// Rust's punctuation of more than one character (the reference's list of tokens).
    const RUST_COMPOUND: &[&str] = &[
        "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "<<=",
        ">>=", "<<", ">>", "...", "..=", "..", "<-", "//", "/*", "*/",
    ];
    let mtcnn = ("mtcnn", "", include_str!("../../examples/kernels/mtcnn.rs"));
    let mut laid_out = 0;
    for (file, _, text) in registry::FILES.iter().chain([&mtcnn]) {
        for inner in lowered::invocations(text) {
            // A generic kernel by its first instance (each expands like a kernel).
            let first = tvm_core::expand::generic::instances(&inner).unwrap().swap_remove(0).1;
            let kernel = tvm_core::frontend::parse_kernel(first).unwrap_or_else(|_| panic!("{file}: parses"));
            let lowered = tvm_core::expand::lower_all(&kernel).unwrap_or_else(|_| panic!("{file}: lowers"));
            let tokens = tvm_core::codegen::rust::emit_rust(&lowered.cpu).unwrap();
            let text = layout(&tokens);
            let back: TokenStream = text.parse().unwrap_or_else(|e| panic!("{file}: {e}\n{text}"));
            let (mut want, mut got) = (Vec::new(), Vec::new());
            flat(&tokens, &mut want);
            flat(&back, &mut got);
            assert_eq!(want.len(), got.len(), "{file}: other tokens:\n{text}");
            for (i, (w, g)) in want.iter().zip(&got).enumerate() {
                assert_eq!(w.0, g.0, "{file}: token {i} differs:\n{text}");
                // A compound punct (`::`, `->`) stays one; puncts the emitter kept apart
                // are not joined into (the start of) one of Rust's compound tokens.
                assert!(!w.1 || g.1, "{file}: token {i} `{}` split from the next:\n{text}", w.0);
                if g.1 && !w.1 {
                    let pair = format!("{}{}", w.0, want[i + 1].0);
                    assert!(!RUST_COMPOUND.iter().any(|c| c.starts_with(&pair)), "{file}: `{pair}` joined:\n{text}");
                }
            }
            // Each statement ends its line.
            let ends = text.lines().filter(|l| l.ends_with(';')).count();
            assert!(ends >= statements(&tokens, true), "{file}: not a line a statement:\n{text}");
            assert!(text.lines().all(|l| (l.len() - l.trim_start().len()) % 4 == 0), "{file}: indent:\n{text}");
            if kernel.name == "onet_head" {
                let out = tvm_core::expand::compute(inner.clone()).to_string();
                let formatted = tvm_core::codegen::text_literal(&text).to_string();
                assert!(out.contains(&formatted), "{file}: onet_head's source is not the linear layout");
                laid_out += 1;
            }
        }
    }
    assert_eq!(laid_out, 1, "the registry has MTCNN's O-Net head");
}
