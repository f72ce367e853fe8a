//! What WGSL modules share beyond their kernels: the helper functions the printer calls
//! (each printed once, where a kernel uses it) and the names no identifier may take.

/// Module-scope helpers, printed once where some kernel uses them.
pub(super) const F32_BITS: &str = "\
// A float from its bits, at run time (a constant infinity or NaN is an error in WGSL).
fn tvm_f32_bits(b: u32) -> f32 {
  return bitcast<f32>(b);
}
";

pub(super) const F32_TO_INT: &str = "\
fn tvm_is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
// Saturating float-to-integer conversions, NaN to 0.
fn tvm_f32_to_i32(x: f32) -> i32 {
  if (tvm_is_nan(x)) {
    return 0i;
  }
  return i32(clamp(x, -2147483648.0f, 2147483520.0f));
}
fn tvm_f32_to_u32(x: f32) -> u32 {
  if (tvm_is_nan(x)) {
    return 0u;
  }
  return u32(clamp(x, 0.0f, 4294967040.0f));
}
";

pub(super) const BOOL_BYTE: &str = "\
// Byte `i % 4` of a word of a bool tensor (bools are stored as bytes).
fn tvm_bool_byte(word: u32, i: i32) -> bool {
  return ((word >> ((u32(i) & 3u) * 8u)) & 255u) != 0u;
}
";

/// The CPU's `erf_f32` (tvm_runtime::math): a degree-6 polynomial below 0.921875, beyond
/// `1 - e^{S(a) - a^2}`, here with WGSL's `exp`.
pub(super) const ERF: &str = "\
fn tvm_erf(x: f32) -> f32 {
  let a = abs(x);
  let z = x * x;
  var p = 7.9684025e-5f;
  p = p * z - 8.043629e-4f;
  p = p * z + 5.1919366e-3f;
  p = p * z - 2.6855586e-2f;
  p = p * z + 1.1283624e-1f;
  p = p * z - 3.761263e-1f;
  p = p * z + 1.2837917e-1f;
  let sign = bitcast<u32>(x) & 0x80000000u;
  if (a < 0.921875f) {
    return bitcast<f32>((bitcast<u32>(abs(x + x * p))) | sign);
  }
  if ((bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u) {
    return x;
  }
  let ac = min(a, 3.925f);
  let v = ac - 2.421875f;
  var s = 2.39872e-7f;
  s = s * v + 1.8806365e-6f;
  s = s * v - 1.5484238e-5f;
  s = s * v + 8.3684594e-5f;
  s = s * v - 4.5634477e-4f;
  s = s * v + 2.3385007e-3f;
  s = s * v - 1.1562509e-2f;
  s = s * v + 5.87317e-2f;
  s = s * v - 3.6165023e-1f;
  s = (s * v + 2.7697958e-8f) - 1.5289143f;
  return bitcast<f32>(bitcast<u32>(1.0f - exp(s - ac * ac)) | sign);
}
";

/// C99 `powf`'s special cases around `exp2(y * log2(|x|))` (WGSL's `pow` has no value
/// for `x <= 0`).
pub(super) const POW: &str = "\
fn tvm_pow(x: f32, y: f32) -> f32 {
  if (y == 0.0f || x == 1.0f) {
    return 1.0f;
  }
  if (tvm_is_nan(x) || tvm_is_nan(y)) {
    return x + y;
  }
  let inf = tvm_f32_bits(0x7f800000u);
  let ax = abs(x);
  if (ax == 1.0f && abs(y) == inf) {
    return 1.0f;
  }
  var r: f32;
  if (ax == 0.0f) {
    r = select(0.0f, inf, y < 0.0f);
  } else {
    r = exp2(y * log2(ax));
  }
  if (bitcast<u32>(x) >= 0x80000000u) {
    if (trunc(y) != y && abs(y) < inf) {
      return tvm_f32_bits(0x7fc00000u);
    }
    if (abs(y) < 16777216.0f && (i32(y) & 1i) == 1i) {
      return -r;
    }
  }
  return r;
}
";

/// WGSL's keywords and reserved words (as naga lists them), the address spaces and
/// access modes, and the predeclared names the printed code calls: no identifier may
/// take them.
pub(super) const RESERVED: &[&str] = &[
    "array",
    "atomic",
    "bool",
    "f32",
    "f16",
    "i32",
    "i64",
    "mat2x2",
    "mat2x3",
    "mat2x4",
    "mat3x2",
    "mat3x3",
    "mat3x4",
    "mat4x2",
    "mat4x3",
    "mat4x4",
    "ptr",
    "sampler",
    "sampler_comparison",
    "texture_1d",
    "texture_2d",
    "texture_2d_array",
    "texture_3d",
    "texture_cube",
    "texture_cube_array",
    "texture_external",
    "texture_multisampled_2d",
    "texture_storage_1d",
    "texture_storage_2d",
    "texture_storage_2d_array",
    "texture_storage_3d",
    "texture_depth_2d",
    "texture_depth_2d_array",
    "texture_depth_cube",
    "texture_depth_cube_array",
    "texture_depth_multisampled_2d",
    "u32",
    "u64",
    "vec2",
    "vec3",
    "vec4",
    "alias",
    "bitcast",
    "break",
    "case",
    "const",
    "continue",
    "continuing",
    "default",
    "discard",
    "else",
    "enable",
    "false",
    "fn",
    "for",
    "if",
    "let",
    "loop",
    "override",
    "return",
    "static_assert",
    "struct",
    "switch",
    "true",
    "type",
    "var",
    "while",
    "CompileShader",
    "ComputeShader",
    "DomainShader",
    "GeometryShader",
    "Hullshader",
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "asm_fragment",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "binding_array",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "handle",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "inout",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "requires",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "signed",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield", // address spaces, access modes
    "function",
    "private",
    "workgroup",
    "uniform",
    "storage",
    "read",
    "write",
    "read_write", // called
    "abs",
    "atomicAnd",
    "atomicCompareExchangeWeak",
    "atomicLoad",
    "atomicOr",
    "atomicStore",
    "ceil",
    "clamp",
    "cos",
    "exp",
    "exp2",
    "floor",
    "fma",
    "inverseSqrt",
    "log",
    "log2",
    "max",
    "min",
    "pow",
    "select",
    "sin",
    "sqrt",
    "tanh",
    "trunc",
    "workgroupBarrier",
];
