//! Fitting a [`LinearModel`] to measured latencies by linear least squares.
//!
//! Once each measurement's shape (N, m, r) is known the model is linear in its parameters,
//! y_i ≈ Σ_j θ_j·φ_j(shape_i), so the fit is an ordinary least-squares problem X θ ≈ y, solved
//! here by a QR factorisation of X (modified Gram–Schmidt, with one re-orthogonalisation pass)
//! and back substitution; no normal equations, so the conditioning is that of X, not X².
//!
//! - By default every row is divided by its measured value, so the fit minimises *relative*
//!   errors: latencies from 4 B to 4 MiB span six orders of magnitude and an absolute fit would
//!   ignore the small messages. `relative: false` gives the plain absolute fit.
//! - Parameters can be fixed to a value (`--fix NAME=VALUE`): their contribution is subtracted
//!   and the rest is fitted.
//! - A parameter whose feature column is a linear combination of the others' on the given points
//!   (for example T_flag_read and T_step of (4.2) when r is the same everywhere) cannot be
//!   determined; the fit says which one instead of returning an arbitrary split. The same holds
//!   for fewer points than free parameters.
//!
//! Reported quality: R² = 1 − SS_res/SS_tot on the measured scale, and the largest relative error
//! |ŷ − y|/y with its input line.

use crate::error::{Result, SimError};

use super::input::Sample;
use super::{dot, LinearModel, Shape};

/// How to fit.
#[derive(Clone, Debug)]
pub struct FitOptions {
    /// Fan-out r used for models with [`LinearModel::uses_fanout`].
    pub fanout: usize,
    /// Parameters held at a value, by name (names a model lacks are ignored for it).
    pub fixed: Vec<(String, f64)>,
    /// Minimise relative (true) or absolute (false) errors.
    pub relative: bool,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            fanout: 4,
            fixed: Vec::new(),
            relative: true,
        }
    }
}

/// The result of fitting one model to one set of points.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The model.
    pub model: LinearModel,
    /// Fan-out the shapes were built with.
    pub fanout: usize,
    /// All parameters, fitted or fixed, in the model's order.
    pub theta: Vec<f64>,
    /// Which parameters were fixed rather than fitted.
    pub fixed: Vec<bool>,
    /// Number of points.
    pub points: usize,
    /// R² on the measured scale (None when all measurements are equal).
    pub r2: Option<f64>,
    /// Largest relative error and the input line where it occurs.
    pub max_rel_err: (f64, usize),
}

impl Fit {
    /// Predicted latency (µs) at `ranks` and `bytes`.
    pub fn predict(&self, ranks: usize, bytes: usize) -> f64 {
        self.model.eval(&self.theta, self.shape(ranks, bytes))
    }

    fn shape(&self, ranks: usize, bytes: usize) -> Shape {
        Shape {
            ranks,
            bytes,
            fanout: self.fanout,
        }
    }
}

/// Fits `model` to `samples` (all of one collective).
pub fn fit_model(model: &LinearModel, samples: &[Sample], opts: &FitOptions) -> Result<Fit> {
    let fanout = opts.fanout;
    if model.uses_fanout && fanout < 2 {
        return Err(SimError::invalid(format!(
            "model `{}`: the fan-out r must be at least 2, got {fanout}",
            model.name
        )));
    }
    let fixed_value = |p: &str| opts.fixed.iter().find(|(n, _)| n == p).map(|(_, v)| *v);
    let fixed: Vec<bool> = model
        .params
        .iter()
        .map(|p| fixed_value(p).is_some())
        .collect();
    let free: Vec<usize> = (0..model.params.len()).filter(|&j| !fixed[j]).collect();
    if samples.len() < free.len() {
        let lines: Vec<String> = samples.iter().map(|s| s.line.to_string()).collect();
        return Err(SimError::invalid(format!(
            "model `{}` has {} free parameters but there {} only {} (line{} {}): need at least {}",
            model.name,
            free.len(),
            if samples.len() == 1 { "is" } else { "are" },
            points(samples.len()),
            if samples.len() == 1 { "" } else { "s" },
            lines.join(", "),
            free.len()
        )));
    }
    let shape = |s: &Sample| Shape {
        ranks: s.ranks,
        bytes: s.bytes,
        fanout,
    };
    let weight = |s: &Sample| if opts.relative { 1.0 / s.usec } else { 1.0 };
    // Columns of the weighted design matrix (free parameters) and the weighted target with the
    // fixed parameters' contribution removed.
    let mut cols = vec![Vec::with_capacity(samples.len()); free.len()];
    let mut target = Vec::with_capacity(samples.len());
    for s in samples {
        let phi = (model.features)(shape(s));
        let w = weight(s);
        let known: f64 = (0..phi.len())
            .filter(|&j| fixed[j])
            .map(|j| phi[j] * fixed_value(model.params[j]).unwrap_or(0.0))
            .sum();
        for (col, &j) in cols.iter_mut().zip(&free) {
            col.push(phi[j] * w);
        }
        target.push((s.usec - known) * w);
    }
    let names: Vec<&str> = free.iter().map(|&j| model.params[j]).collect();
    let solved = least_squares(&cols, &target).map_err(|d| not_identifiable(model, &names, d))?;
    let mut theta: Vec<f64> = model
        .params
        .iter()
        .map(|p| fixed_value(p).unwrap_or(0.0))
        .collect();
    for (&j, v) in free.iter().zip(solved) {
        theta[j] = v;
    }
    let predicted: Vec<f64> = samples
        .iter()
        .map(|s| dot(&theta, &(model.features)(shape(s))))
        .collect();
    Ok(Fit {
        model: *model,
        fanout,
        theta,
        fixed,
        points: samples.len(),
        r2: r_squared(samples, &predicted),
        max_rel_err: max_relative_error(samples, &predicted),
    })
}

/// "1 point", "3 points".
pub fn points(n: usize) -> String {
    format!("{n} point{}", if n == 1 { "" } else { "s" })
}

fn not_identifiable(model: &LinearModel, names: &[&str], d: Dependent) -> SimError {
    let k = d.column;
    let why = if d.zero {
        "it does not affect any of these points".to_string()
    } else {
        format!(
            "on these points its effect is a combination of the effects of {}",
            names[..k].join(", ")
        )
    };
    SimError::invalid(format!(
        "model `{}`: parameter {} cannot be determined: {why} (measure more rank counts or sizes, \
         or fix it with --fix {}=VALUE)",
        model.name, names[k], names[k]
    ))
}

/// A column the least-squares problem cannot determine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dependent {
    /// Its index.
    pub column: usize,
    /// True when the column is zero, false when it is a combination of the columns before it.
    pub zero: bool,
}

/// Solves min ‖Σ_j θ_j·cols[j] − y‖ by modified Gram–Schmidt QR; fails on the first column that
/// is (within rounding) zero or a combination of the columns before it.
pub fn least_squares(cols: &[Vec<f64>], y: &[f64]) -> std::result::Result<Vec<f64>, Dependent> {
    let p = cols.len();
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(p);
    let mut r = vec![vec![0.0; p]; p];
    for (j, col) in cols.iter().enumerate() {
        let mut v = col.clone();
        let norm0 = norm(&v);
        for _pass in 0..2 {
            for (i, qi) in q.iter().enumerate() {
                let c = dot(qi, &v);
                r[i][j] += c;
                axpy(&mut v, -c, qi);
            }
        }
        let n = norm(&v);
        if norm0 == 0.0 || !n.is_finite() || n <= 1e-9 * norm0 {
            return Err(Dependent {
                column: j,
                zero: norm0 == 0.0,
            });
        }
        r[j][j] = n;
        q.push(v.iter().map(|x| x / n).collect());
    }
    let mut z = y.to_vec();
    let mut c = vec![0.0; p];
    for (i, qi) in q.iter().enumerate() {
        c[i] = dot(qi, &z);
        axpy(&mut z, -c[i], qi);
    }
    let mut theta = vec![0.0; p];
    for i in (0..p).rev() {
        let tail: f64 = (i + 1..p).map(|k| r[i][k] * theta[k]).sum();
        theta[i] = (c[i] - tail) / r[i][i];
    }
    Ok(theta)
}

fn norm(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

fn axpy(v: &mut [f64], a: f64, x: &[f64]) {
    for (vi, xi) in v.iter_mut().zip(x) {
        *vi += a * xi;
    }
}

fn r_squared(samples: &[Sample], predicted: &[f64]) -> Option<f64> {
    let mean = samples.iter().map(|s| s.usec).sum::<f64>() / samples.len() as f64;
    let ss_tot: f64 = samples.iter().map(|s| (s.usec - mean).powi(2)).sum();
    let ss_res: f64 = samples
        .iter()
        .zip(predicted)
        .map(|(s, p)| (s.usec - p).powi(2))
        .sum();
    (ss_tot > 0.0).then(|| 1.0 - ss_res / ss_tot)
}

fn max_relative_error(samples: &[Sample], predicted: &[f64]) -> (f64, usize) {
    samples
        .iter()
        .zip(predicted)
        .map(|(s, p)| ((p - s.usec).abs() / s.usec, s.line))
        .fold((-1.0, 0), |best, e| if e.0 > best.0 { e } else { best })
}

#[cfg(test)]
mod tests {
    use super::super::{nic, rm, tree};
    use super::*;

    fn synthetic(
        model: &LinearModel,
        theta: &[f64],
        shapes: &[(usize, usize)],
        r: usize,
    ) -> Vec<Sample> {
        shapes
            .iter()
            .enumerate()
            .map(|(i, &(ranks, bytes))| Sample {
                collective: model.collectives[0].to_string(),
                algorithm: model.name.to_string(),
                ranks,
                bytes,
                usec: model.eval(
                    theta,
                    Shape {
                        ranks,
                        bytes,
                        fanout: r,
                    },
                ),
                line: i + 1,
            })
            .collect()
    }

    fn assert_recovers(model: &LinearModel, theta: &[f64], shapes: &[(usize, usize)], r: usize) {
        for relative in [true, false] {
            let samples = synthetic(model, theta, shapes, r);
            let opts = FitOptions {
                fanout: r,
                relative,
                ..FitOptions::default()
            };
            let fit = fit_model(model, &samples, &opts).unwrap();
            for (got, want) in fit.theta.iter().zip(theta) {
                assert!(
                    (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "{}: {got} vs {want}",
                    model.name
                );
            }
            assert!(fit.max_rel_err.0 < 1e-9);
            assert!(fit.r2.unwrap() > 1.0 - 1e-12);
        }
    }

    const GRID: [(usize, usize); 12] = [
        (2, 4),
        (2, 64),
        (2, 1024),
        (4, 4),
        (4, 64),
        (4, 1024),
        (8, 4),
        (8, 64),
        (8, 1024),
        (16, 4),
        (32, 64),
        (64, 1024),
    ];

    #[test]
    fn fitting_recovers_known_parameters_from_synthetic_data() {
        assert_recovers(&tree::BINOMIAL, &[1.7, 0.0003], &GRID, 2);
        assert_recovers(&tree::RECURSIVE_DOUBLING, &[0.9, 0.001], &GRID, 2);
        assert_recovers(&tree::RING, &[0.4, 0.002], &GRID, 2);
        assert_recovers(&tree::DISSEMINATION, &[0.8], &GRID, 2);
        assert_recovers(&nic::NIC_BARRIER, &nic::QUADRICS.theta(), &GRID, 2);
        assert_recovers(&rm::FLAT_BARRIER, &[0.2, 0.11], &GRID, 2);
        assert_recovers(&rm::SINGLE_COPY, &[0.5, 0.07, 0.0001], &GRID, 2);
        assert_recovers(&rm::SIMULTANEOUS, &rm::SCRAMNET.allreduce_theta(), &GRID, 2);
        assert_recovers(&rm::BCAST, &rm::RM_MODEL.bcast_theta(), &GRID, 4);
    }

    #[test]
    fn fixed_parameters_are_kept_and_the_rest_fitted() {
        let samples = synthetic(&rm::BARRIER, &rm::RM_MODEL.barrier_theta(), &GRID, 4);
        let opts = FitOptions {
            fixed: vec![("T_step".into(), 0.33)],
            ..FitOptions::default()
        };
        let fit = fit_model(&rm::BARRIER, &samples, &opts).unwrap();
        assert_eq!(fit.fixed, vec![false, true, false]);
        assert!((fit.theta[0] - 0.95).abs() < 1e-9 && (fit.theta[2] - 0.058).abs() < 1e-9);
    }

    #[test]
    fn confounded_parameters_are_named() {
        // With one fan-out (N ≥ r everywhere), (r−1)·steps is proportional to steps:
        // T_flag_read and T_step merge.
        let samples = synthetic(&rm::BARRIER, &rm::RM_MODEL.barrier_theta(), &GRID[3..], 4);
        let e = fit_model(&rm::BARRIER, &samples, &FitOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter T_step cannot be determined")
                && e.contains("the effects of T_flag_read ("),
            "{e}"
        );
        assert!(e.contains("--fix T_step=VALUE"), "{e}");
        // Only 2-rank points: the NIC barrier's slope is invisible.
        let two: Vec<Sample> = synthetic(&nic::NIC_BARRIER, &[1.0, 2.0], &GRID[..3], 2);
        let e = fit_model(&nic::NIC_BARRIER, &two, &FitOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter T_trig cannot be determined: it does not affect"),
            "{e}"
        );
    }

    #[test]
    fn too_few_points_is_an_error_with_the_lines() {
        let samples = synthetic(&rm::SIMULTANEOUS, &[1.0, 1.0, 1.0, 1.0], &GRID[..2], 2);
        let e = fit_model(&rm::SIMULTANEOUS, &samples, &FitOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("4 free parameters but there are only 2 points (lines 1, 2)"),
            "{e}"
        );
    }

    #[test]
    fn noisy_data_reports_its_residuals() {
        let mut samples = synthetic(&tree::BINOMIAL, &[1.0, 0.001], &GRID, 2);
        samples[3].usec *= 1.5;
        let fit = fit_model(&tree::BINOMIAL, &samples, &FitOptions::default()).unwrap();
        assert_eq!(fit.max_rel_err.1, 4);
        assert!(fit.r2.unwrap() < 1.0);
    }
}
