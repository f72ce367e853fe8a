//! The search's cost model: gradient-boosted regression trees (smartcore's XGBoost
//! algorithm) fitted to the log of the measured times, retrained after every round, as
//! Ansor and MetaSchedule rank candidates with XGBoost. A candidate's features are its
//! knob values (the number where a knob's values are numbers, one-hot otherwise) and a
//! few static ones of its lowered function (`tvm_core::cost`: FLOPs, bytes, loops).

use smartcore::linalg::basic::matrix::DenseMatrix;
use smartcore::xgboost::{XGRegressor, XGRegressorParameters};
use std::collections::BTreeMap;
use tvm_core::tir::{Expr, PrimFunc};
use tvm_core::tune::Knob;

/// How knob values become numbers.
#[derive(Clone, Debug)]
pub struct Encoder {
    columns: Vec<Column>,
}

#[derive(Clone, Debug)]
enum Column {
    /// Every value is a number: the value itself.
    Number(Vec<f64>),
    /// Otherwise one 0/1 column per value.
    OneHot(usize),
}

impl Encoder {
    pub fn new(knobs: &[Knob]) -> Encoder {
        let columns = knobs
            .iter()
            .map(|k| {
                let nums: Option<Vec<f64>> = k.values.iter().map(|v| v.trim().parse::<f64>().ok()).collect();
                match nums {
                    Some(v) => Column::Number(v),
                    None => Column::OneHot(k.values.len()),
                }
            })
            .collect();
        Encoder { columns }
    }

    /// The features of the candidate `choice` (value index per knob), then `extra`.
    pub fn encode(&self, choice: &[usize], extra: &[f64]) -> Vec<f64> {
        let mut out = Vec::new();
        for (c, &i) in self.columns.iter().zip(choice) {
            match c {
                Column::Number(v) => out.push(v[i]),
                Column::OneHot(n) => out.extend((0..*n).map(|k| if k == i { 1.0 } else { 0.0 })),
            }
        }
        out.extend_from_slice(extra);
        out
    }
}

/// Static features of a lowered candidate (with the dims measured): log2 of its FLOPs
/// and bytes, its number of loops, their deepest nesting, and log2 of the iterations of
/// its innermost loops.
pub fn lowered_features(f: &PrimFunc, dims: &BTreeMap<String, i64>) -> Vec<f64> {
    let (nodes, flops, bytes) = tvm_core::cost::cost(f);
    let value = |e: &Expr| -> f64 {
        let mut map = std::collections::HashMap::new();
        for v in tvm_core::tir::visit::vars_of(e) {
            if let Some(&x) = dims.get(v.name()) {
                map.insert(v.clone(), Expr::int(x));
            }
        }
        let e = tvm_core::arith::Analyzer::new().simplify(&tvm_core::tir::mutate::substitute(e.clone(), &map));
        e.as_int().map_or(0.0, |n| n as f64)
    };
    // Loops, deepest nesting, and innermost iterations (each leaf's trip counts along
    // its path multiplied).
    fn walk(
        n: &tvm_core::cost::CostNode,
        depth: usize,
        outer: f64,
        v: &dyn Fn(&Expr) -> f64,
        acc: &mut (f64, f64, f64),
    ) {
        let trips = outer * v(&n.trips).max(1.0);
        acc.0 += 1.0;
        acc.1 = acc.1.max(depth as f64);
        if n.children.is_empty() {
            acc.2 += trips;
        }
        for c in &n.children {
            walk(c, depth + 1, trips, v, acc);
        }
    }
    let mut acc = (0.0, 0.0, 0.0);
    for n in &nodes {
        walk(n, 1, 1.0, &value, &mut acc);
    }
    let log = |x: f64| (1.0 + x.max(0.0)).log2();
    vec![log(value(&flops)), log(value(&bytes)), acc.0, acc.1, log(acc.2)]
}

/// A fitted model: predicts the log of a candidate's time from its features.
pub struct Model {
    xgb: XGRegressor<f64, f64, DenseMatrix<f64>, Vec<f64>>,
}

impl Model {
    /// The model of `y` (log times) from `x`, or `None` with too few rows or on a failure
    /// of the learner.
    pub fn fit(x: &[Vec<f64>], y: &[f64], seed: u64) -> Option<Model> {
        if x.len() < 3 || x.len() != y.len() {
            return None;
        }
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        let params = XGRegressorParameters::default()
            .with_n_estimators(60)
            .with_max_depth(4)
            .with_learning_rate(0.3)
            .with_min_child_weight(1)
            .with_lambda(1.0)
            .with_base_score(mean)
            .with_seed(seed);
        let m = DenseMatrix::from_2d_vec(&x.to_vec()).ok()?;
        let xgb = XGRegressor::fit(&m, &y.to_vec(), params).ok()?;
        Some(Model { xgb })
    }

    /// The predicted log times of `x` (lower is faster).
    pub fn predict(&self, x: &[Vec<f64>]) -> Vec<f64> {
        if x.is_empty() {
            return Vec::new();
        }
        let Ok(m) = DenseMatrix::from_2d_vec(&x.to_vec()) else { return vec![0.0; x.len()] };
        self.xgb.predict(&m).unwrap_or_else(|_| vec![0.0; x.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_ranks_by_what_it_learned() {
        // Time grows with the first feature and falls with the second.
        let x: Vec<Vec<f64>> = (0..40).map(|i| vec![(i % 8) as f64, (i / 8) as f64]).collect();
        let y: Vec<f64> = x.iter().map(|r| r[0] - 0.5 * r[1]).collect();
        let m = Model::fit(&x, &y, 1).expect("fits");
        let p = m.predict(&[vec![0.0, 4.0], vec![7.0, 0.0], vec![3.0, 2.0]]);
        assert!(p[0] < p[2] && p[2] < p[1], "{p:?}");
        assert!(Model::fit(&x[..2], &y[..2], 1).is_none(), "too few rows");
    }

    #[test]
    fn knobs_encode_as_numbers_or_one_hot() {
        let knob = |name: &str, values: &[&str]| Knob {
            name: name.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            value_locs: vec![],
            loc: Default::default(),
            named: true,
        };
        let e = Encoder::new(&[knob("w", &["8", "16", "32"]), knob("at", &["c.i", "c.j"])]);
        assert_eq!(e.encode(&[2, 1], &[5.0]), vec![32.0, 0.0, 1.0, 5.0]);
        assert_eq!(e.encode(&[0, 0], &[]), vec![8.0, 1.0, 0.0]);
    }
}
