//! Targets, parsed from TVM-style strings (`"cuda -arch=sm_90"`), and the attributes
//! code generation queries instead of comparing target names.

use crate::dtype::DType;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// The host CPU (`cpu` or `llvm`), code emitted as Rust.
    Cpu,
    Cuda,
    OpenCl,
    /// WebGPU: WGSL run through wgpu (Vulkan, Metal, DX12), 32-bit indices.
    WebGpu,
    /// Source emission only.
    Metal,
}

impl TargetKind {
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Cpu => "cpu",
            TargetKind::Cuda => "cuda",
            TargetKind::OpenCl => "opencl",
            TargetKind::WebGpu => "webgpu",
            TargetKind::Metal => "metal",
        }
    }
}

/// A compilation target and its attributes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub kind: TargetKind,
    /// The string it was parsed from, normalised (`cuda -arch=sm_80`).
    pub text: String,
    /// CUDA compute capability × 10 (`80` for `sm_80`).
    pub sm: u32,
    pub max_threads_per_block: u32,
    pub warp_size: u32,
    pub max_shared_memory_per_block: u32,
    /// CPU features (`avx2`, `fma`, `avx512f`), sorted.
    pub features: Vec<String>,
    pub mcpu: Option<String>,
    pub num_cores: Option<u32>,
    pub opencl_device: Option<String>,
    /// CUDA: fast math intrinsics (`__expf`, ...) instead of the precise functions
    /// (`-fast-math`; off by default).
    pub fast_math: bool,
    /// CPU: contract `a * b + c` into fused multiply-adds where the CPU has FMA (on by
    /// default; `-fp-contract=off` keeps two roundings).
    pub fp_contract: bool,
}

/// Why a target string was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetError {
    Empty,
    UnknownKind { kind: String },
    UnknownOption { kind: String, option: String },
    BadValue { option: String, value: String, expected: &'static str },
    UnknownArch { arch: String },
    UnknownFeature { feature: String },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Empty => write!(f, "empty target string"),
            TargetError::UnknownKind { kind } => {
                write!(f, "unknown target `{kind}`; expected one of cpu, llvm, cuda, opencl, webgpu, metal")
            }
            TargetError::UnknownOption { kind, option } => {
                write!(f, "unknown option `{option}` for target `{kind}`")
            }
            TargetError::BadValue { option, value, expected } => {
                write!(f, "bad value `{value}` for `{option}`: expected {expected}")
            }
            TargetError::UnknownArch { arch } => {
                write!(f, "unknown CUDA architecture `{arch}`; expected sm_50 .. sm_90a (e.g. sm_80)")
            }
            TargetError::UnknownFeature { feature } => {
                write!(f, "unknown CPU feature `{feature}`; known: avx, avx2, fma, avx512f, sse4.1, sse4.2, neon")
            }
        }
    }
}

impl std::error::Error for TargetError {}

const KNOWN_FEATURES: &[&str] = &["sse2", "sse4.1", "sse4.2", "avx", "avx2", "fma", "avx512f", "neon"];

impl Target {
    fn base(kind: TargetKind) -> Target {
        let (mt, ws, smem) = match kind {
            TargetKind::Cuda => (1024, 32, 48 * 1024),
            TargetKind::OpenCl => (256, 1, 32 * 1024),
            // WebGPU's default limits (`maxComputeInvocationsPerWorkgroup`,
            // `maxComputeWorkgroupStorageSize`), which every adapter offers; subgroups are
            // an optional feature, so reductions across threads go through shared memory.
            TargetKind::WebGpu => (256, 1, 16 * 1024),
            TargetKind::Metal => (1024, 32, 32 * 1024),
            TargetKind::Cpu => (1, 1, 0),
        };
        Target {
            kind,
            text: kind.name().to_string(),
            sm: if kind == TargetKind::Cuda { 80 } else { 0 },
            max_threads_per_block: mt,
            warp_size: ws,
            max_shared_memory_per_block: smem,
            features: Vec::new(),
            mcpu: None,
            num_cores: None,
            opencl_device: None,
            fast_math: false,
            fp_contract: true,
        }
    }

    /// The default target of a kind.
    pub fn cpu() -> Target {
        Target::base(TargetKind::Cpu)
    }
    pub fn cuda() -> Target {
        Target::parse("cuda").expect("the default cuda target parses")
    }
    pub fn opencl() -> Target {
        Target::base(TargetKind::OpenCl)
    }
    pub fn webgpu() -> Target {
        Target::base(TargetKind::WebGpu)
    }

    /// Parses `KIND -key=value ...`.
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        let mut words = s.split_whitespace();
        let kind_word = words.next().ok_or(TargetError::Empty)?;
        let kind = match kind_word {
            "cpu" | "llvm" | "c" => TargetKind::Cpu,
            "cuda" | "nvptx" => TargetKind::Cuda,
            "opencl" => TargetKind::OpenCl,
            "webgpu" => TargetKind::WebGpu,
            "metal" => TargetKind::Metal,
            other => return Err(TargetError::UnknownKind { kind: other.to_string() }),
        };
        let mut t = Target::base(kind);
        let mut text = vec![kind.name().to_string()];
        for w in words {
            let opt = w.strip_prefix('-').unwrap_or(w);
            let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
            let unknown = || TargetError::UnknownOption { kind: kind_word.to_string(), option: w.to_string() };
            let num = |expected| {
                value.parse::<u32>().ok().filter(|&v| v > 0).ok_or_else(|| TargetError::BadValue {
                    option: key.to_string(),
                    value: value.to_string(),
                    expected,
                })
            };
            match (kind, key) {
                (TargetKind::Cuda, "arch") => {
                    let sm = value
                        .strip_prefix("sm_")
                        .map(|v| v.trim_end_matches('a'))
                        .and_then(|v| v.parse::<u32>().ok())
                        .filter(|v| (50..=90).contains(v) || *v == 100 || *v == 120)
                        .ok_or_else(|| TargetError::UnknownArch { arch: value.to_string() })?;
                    t.sm = sm;
                }
                (
                    TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal,
                    "max_threads_per_block",
                ) => t.max_threads_per_block = num("a positive integer")?,
                (
                    TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal,
                    "max_shared_memory_per_block",
                ) => t.max_shared_memory_per_block = num("a positive number of bytes")?,
                (TargetKind::Cuda, "thread_warp_size") => t.warp_size = num("a positive integer")?,
                (TargetKind::Cuda, "fast-math") => {
                    t.fast_math = match value {
                        "" | "1" | "true" => true,
                        "0" | "false" => false,
                        _ => {
                            return Err(TargetError::BadValue {
                                option: key.to_string(),
                                value: value.to_string(),
                                expected: "nothing, true or false",
                            })
                        }
                    }
                }
                (TargetKind::OpenCl, "device") => t.opencl_device = Some(value.to_string()),
                (TargetKind::Cpu, "mcpu") => {
                    t.mcpu = Some(value.to_string());
                    for f in features_of_cpu(value) {
                        if !t.features.iter().any(|x| x == f) {
                            t.features.push(f.to_string());
                        }
                    }
                }
                (TargetKind::Cpu, "mattr") => {
                    for f in value.split(',').filter(|f| !f.is_empty()) {
                        let (on, name) = match f.as_bytes()[0] {
                            b'+' => (true, &f[1..]),
                            b'-' => (false, &f[1..]),
                            _ => (true, f),
                        };
                        if !KNOWN_FEATURES.contains(&name) {
                            return Err(TargetError::UnknownFeature { feature: name.to_string() });
                        }
                        t.features.retain(|x| x != name);
                        if on {
                            t.features.push(name.to_string());
                        }
                    }
                }
                (TargetKind::Cpu, "num-cores") => t.num_cores = Some(num("a positive integer")?),
                (TargetKind::Cpu, "fp-contract") => {
                    t.fp_contract = match value {
                        "on" | "fast" => true,
                        "off" => false,
                        _ => {
                            return Err(TargetError::BadValue {
                                option: key.to_string(),
                                value: value.to_string(),
                                expected: "on or off",
                            })
                        }
                    }
                }
                (TargetKind::Cpu, "mtriple") => {}
                _ => return Err(unknown()),
            }
            text.push(w.to_string());
        }
        t.features.sort();
        if kind == TargetKind::Cuda && !s.contains("-arch=") {
            text.push(format!("-arch=sm_{}", t.sm));
        }
        t.text = text.join(" ");
        Ok(t)
    }

    pub fn is_gpu(&self) -> bool {
        matches!(self.kind, TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal)
    }
    pub fn is_cpu(&self) -> bool {
        self.kind == TargetKind::Cpu
    }
    pub fn has_feature(&self, f: &str) -> bool {
        self.features.iter().any(|x| x == f)
    }
    /// The block size the default GPU schedule splits by.
    pub fn preferred_block_size(&self) -> u32 {
        self.max_threads_per_block.min(256)
    }
    /// Lanes of a vector register for `dtype` (AVX-512: 16 × f32; AVX2: 8; SSE/NEON: 4;
    /// GPUs: 4-wide vector types). The plain `cpu` target (no features named) is compiled
    /// for every feature level and dispatched at run time, so its width is the widest
    /// level's, AVX-512 (an AVX2 machine runs each 16-lane operation as two).
    pub fn vector_lanes(&self, dtype: DType) -> u32 {
        let bits = match self.kind {
            TargetKind::Cpu => {
                if self.has_feature("avx512f") || self.features.is_empty() {
                    512
                } else if self.has_feature("avx2") || self.has_feature("avx") {
                    256
                } else {
                    128
                }
            }
            _ => 128,
        };
        (bits / (dtype.bits.max(8) as u32)).max(1)
    }
    /// Tensor cores exist (sm_70 and later).
    pub fn has_tensor_cores(&self) -> bool {
        self.kind == TargetKind::Cuda && self.sm >= 70
    }
    /// Native bf16 arithmetic (sm_80 and later).
    pub fn has_bf16(&self) -> bool {
        self.kind == TargetKind::Cuda && self.sm >= 80
    }
}

fn features_of_cpu(mcpu: &str) -> &'static [&'static str] {
    match mcpu {
        "skylake-avx512" | "cascadelake" | "icelake-server" | "sapphirerapids" | "znver4" => {
            &["avx", "avx2", "fma", "avx512f"]
        }
        "haswell" | "skylake" | "znver1" | "znver2" | "znver3" | "x86-64-v3" => &["avx", "avx2", "fma"],
        _ => &[],
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
