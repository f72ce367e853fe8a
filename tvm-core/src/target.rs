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
    /// What the auto-scheduler sizes its tiles by (registers, caches, cores; SMs and
    /// their registers and shared memory): defaults per kind and per known `-mcpu` or
    /// `-arch`, each overridable in the target string.
    pub facts: Facts,
}

/// The machine facts of a [`Target`] that the auto-scheduler's analytical model reads
/// (`crate::autosched`). The CPU's are those of one core, except `cores`; the GPU's those
/// of one streaming multiprocessor (compute unit), except `sm_count`.
///
/// | fact | option | `cpu` default |
/// |---|---|---|
/// | vector registers | `-vector-registers=` | 32 (AVX-512; 16 for AVX2 and older) |
/// | FMA units a core | `-fma-units=` | 2 |
/// | FMA latency, cycles | `-fma-latency=` | 4 |
/// | L1 / L2 data cache a core, L3 in all | `-l1-cache=`, `-l2-cache=`, `-l3-cache=` (bytes, or `48K`, `2M`) | 32K, 1M, 16M |
/// | cores | `-num-cores=` | 4 |
///
/// | fact | option | `cuda` default (sm_80; sm_90: 132 SMs, 228K) | `opencl`, `webgpu`, `metal` default |
/// |---|---|---|---|
/// | SMs / compute units | `-sm_count=` | 108 | 16 |
/// | 32-bit registers an SM | `-registers_per_sm=` | 65536 | 65536 |
/// | registers a thread at most | `-max_registers_per_thread=` | 255 | 255 |
/// | shared memory an SM | `-max_shared_memory_per_sm=` | 164K | 64K |
/// | resident threads an SM | `-max_threads_per_sm=` | 2048 | 1024 |
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Facts {
    pub vector_registers: u32,
    pub fma_units: u32,
    pub fma_latency: u32,
    pub l1_bytes: u64,
    pub l2_bytes: u64,
    pub l3_bytes: u64,
    pub cores: u32,
    pub sm_count: u32,
    pub registers_per_sm: u32,
    pub max_registers_per_thread: u32,
    pub shared_memory_per_sm: u32,
    pub max_threads_per_sm: u32,
}

impl Facts {
    fn of(kind: TargetKind) -> Facts {
        let gpu = |sm_count, shared_memory_per_sm, max_threads_per_sm| Facts {
            vector_registers: 0,
            fma_units: 0,
            fma_latency: 0,
            l1_bytes: 0,
            l2_bytes: 0,
            l3_bytes: 0,
            cores: 0,
            sm_count,
            registers_per_sm: 65536,
            max_registers_per_thread: 255,
            shared_memory_per_sm,
            max_threads_per_sm,
        };
        match kind {
            TargetKind::Cpu => Facts {
                vector_registers: 32,
                fma_units: 2,
                fma_latency: 4,
                l1_bytes: 32 << 10,
                l2_bytes: 1 << 20,
                l3_bytes: 16 << 20,
                cores: 4,
                ..gpu(0, 0, 0)
            },
            TargetKind::Cuda => gpu(108, 164 << 10, 2048),
            // Portable GPUs: a mid-range device's figures (a target option overrides them).
            TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal => gpu(16, 64 << 10, 1024),
        }
    }
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
            facts: Facts::of(kind),
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
            let bytes = || {
                parse_bytes(value).ok_or_else(|| TargetError::BadValue {
                    option: key.to_string(),
                    value: value.to_string(),
                    expected: "a positive number of bytes (`48K`, `2M` or a plain number)",
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
                    t.facts = facts_of_arch(sm);
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
                (TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal, "sm_count") => {
                    t.facts.sm_count = num("a positive integer")?
                }
                (
                    TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal,
                    "registers_per_sm",
                ) => t.facts.registers_per_sm = num("a positive integer")?,
                (
                    TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal,
                    "max_registers_per_thread",
                ) => t.facts.max_registers_per_thread = num("a positive integer")?,
                (
                    TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal,
                    "max_shared_memory_per_sm",
                ) => t.facts.shared_memory_per_sm = bytes()? as u32,
                (
                    TargetKind::Cuda | TargetKind::OpenCl | TargetKind::WebGpu | TargetKind::Metal,
                    "max_threads_per_sm",
                ) => t.facts.max_threads_per_sm = num("a positive integer")?,
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
                    facts_of_cpu(value, &mut t.facts);
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
                (TargetKind::Cpu, "num-cores") => {
                    let n = num("a positive integer")?;
                    t.num_cores = Some(n);
                    t.facts.cores = n;
                }
                (TargetKind::Cpu, "vector-registers") => t.facts.vector_registers = num("a positive integer")?,
                (TargetKind::Cpu, "fma-units") => t.facts.fma_units = num("a positive integer")?,
                (TargetKind::Cpu, "fma-latency") => t.facts.fma_latency = num("a positive integer")?,
                (TargetKind::Cpu, "l1-cache") => t.facts.l1_bytes = bytes()?,
                (TargetKind::Cpu, "l2-cache") => t.facts.l2_bytes = bytes()?,
                (TargetKind::Cpu, "l3-cache") => t.facts.l3_bytes = bytes()?,
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
        // Without AVX-512 an x86 core has 16 vector registers (NEON has 32).
        if kind == TargetKind::Cpu
            && !t.features.is_empty()
            && !t.has_feature("avx512f")
            && !t.has_feature("neon")
            && !s.contains("-vector-registers=")
        {
            t.facts.vector_registers = 16;
        }
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

/// The caches and units of the CPU families `-mcpu` knows (options given after it win).
fn facts_of_cpu(mcpu: &str, f: &mut Facts) {
    let (l1, l2) = match mcpu {
        "skylake-avx512" | "cascadelake" => (32 << 10, 1 << 20),
        "icelake-server" => (48 << 10, 1280 << 10),
        "sapphirerapids" | "emeraldrapids" | "graniterapids" => (48 << 10, 2 << 20),
        "znver4" | "znver3" | "znver2" => (32 << 10, if mcpu == "znver4" { 1 << 20 } else { 512 << 10 }),
        "haswell" | "skylake" | "znver1" | "x86-64-v3" => (32 << 10, 256 << 10),
        _ => return,
    };
    f.l1_bytes = l1;
    f.l2_bytes = l2;
}

/// The SM facts of a CUDA architecture (`sm_90a` like `sm_90`; options given after
/// `-arch` win).
fn facts_of_arch(sm: u32) -> Facts {
    let mut f = Facts::of(TargetKind::Cuda);
    let (sms, smem, threads) = match sm {
        90 => (132, 228 << 10, 2048),
        89 => (58, 100 << 10, 1536),
        86 | 87 => (84, 100 << 10, 1536),
        80 => (108, 164 << 10, 2048),
        75 => (40, 64 << 10, 1024),
        70 | 72 => (80, 96 << 10, 2048),
        100 | 120 => (132, 228 << 10, 2048),
        _ => (20, 48 << 10, 2048),
    };
    f.sm_count = sms;
    f.shared_memory_per_sm = smem;
    f.max_threads_per_sm = threads;
    f
}

/// `48K`, `2M`, `1G` or a plain byte count; positive.
fn parse_bytes(v: &str) -> Option<u64> {
    let (digits, unit) = match v.as_bytes().last()? {
        b'K' | b'k' => (&v[..v.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&v[..v.len() - 1], 1 << 20),
        b'G' | b'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    digits.parse::<u64>().ok().filter(|&n| n > 0).and_then(|n| n.checked_mul(unit))
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
