//! What `reflex-info` prints: version, build, and the effective configuration.
//!
//! The configuration table comes from [`reflex_base::config::Config::describe`], the single
//! place where settings are documented. Unknown `REFLEX_*` variables are reported with the
//! closest valid name; an invalid value is reported (its default is shown in its place) and
//! makes `reflex-info` exit with status 1.

use std::ffi::OsString;
use std::fmt::Write as _;

use reflex_base::config::{Config, ConfigError, ConfigWarning, SettingRow};

/// Facts fixed at build time (by `build.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    pub version: &'static str,
    pub profile: &'static str,
    pub target: &'static str,
    pub rustc: &'static str,
    pub commit: &'static str,
}

/// The build this binary came from.
pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    profile: env!("RFX_BUILD_PROFILE"),
    target: env!("RFX_BUILD_TARGET"),
    rustc: env!("RFX_BUILD_RUSTC"),
    commit: env!("RFX_BUILD_COMMIT"),
};

/// `reflex-info` on the process environment: prints the report, returns the exit status.
pub fn info_main() -> i32 {
    let (report, status) = report(&BUILD, std::env::vars_os().collect());
    print!("{report}");
    status
}

/// The report for these variables, and the exit status (1 if a setting is invalid).
pub fn report(build: &BuildInfo, vars: Vec<(OsString, OsString)>) -> (String, i32) {
    let (config, warnings, errors) = load(vars);
    let mut out = String::new();
    let _ = writeln!(out, "Reflex {}", build.version);
    let _ = writeln!(out, "build:");
    for (key, value) in [
        ("profile", build.profile),
        ("target", build.target),
        ("rustc", build.rustc),
        ("commit", build.commit),
    ] {
        let _ = writeln!(out, "  {key:<8} {value}");
    }
    let _ = writeln!(out, "configuration:");
    out.push_str(&table(&config.describe(), &errors));
    for warning in &warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    if let Some(errors) = &errors {
        for invalid in &errors.invalid {
            let _ = writeln!(out, "error: {invalid}");
        }
    }
    (out, i32::from(errors.is_some()))
}

/// Loads the configuration; on invalid values, loads the others and keeps the errors.
fn load(vars: Vec<(OsString, OsString)>) -> (Config, Vec<ConfigWarning>, Option<ConfigError>) {
    match Config::from_vars(vars.iter().cloned()) {
        Ok(loaded) => (loaded.config, loaded.warnings, None),
        Err(errors) => {
            let valid = vars
                .into_iter()
                .filter(|(name, _)| !errors.invalid.iter().any(|bad| name == bad.name));
            match Config::from_vars(valid) {
                Ok(loaded) => (loaded.config, loaded.warnings, Some(errors)),
                Err(_) => (Config::default(), Vec::new(), Some(errors)),
            }
        }
    }
}

/// Aligned columns: name, value, default, source, description.
fn table(rows: &[SettingRow], errors: &Option<ConfigError>) -> String {
    let invalid = |name: &str| {
        errors
            .as_ref()
            .is_some_and(|e| e.invalid.iter().any(|bad| bad.name == name))
    };
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            let source = if invalid(row.name) {
                "invalid".to_owned()
            } else {
                row.source.to_string()
            };
            [
                row.name.to_owned(),
                row.value.clone(),
                row.default.clone(),
                source,
                row.doc.to_owned(),
            ]
        })
        .collect();
    let header = ["name", "value", "default", "source", "description"].map(str::to_owned);
    let mut widths = [0usize; 4];
    for line in std::iter::once(&header).chain(&cells) {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = String::new();
    for line in std::iter::once(&header).chain(&cells) {
        out.push(' ');
        for (width, cell) in widths.iter().zip(line) {
            let _ = write!(out, " {cell:<width$}");
        }
        let _ = writeln!(out, " {}", line[4]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn report_lists_build_and_every_setting() {
        let (text, status) = report(
            &BUILD,
            vars(&[("REFLEX_EAGER_LIMIT", "32k"), ("HOME", "/")]),
        );
        assert_eq!(status, 0);
        assert!(text.starts_with(&format!("Reflex {}\n", BUILD.version)));
        assert!(text.contains(&format!("  target   {}\n", BUILD.target)));
        for name in reflex_base::config::SETTING_NAMES {
            assert!(text.contains(name), "{name} missing");
        }
        let eager = text
            .lines()
            .find(|l| l.contains("REFLEX_EAGER_LIMIT"))
            .unwrap();
        let words: Vec<&str> = eager.split_whitespace().collect();
        assert_eq!(
            &words[..4],
            ["REFLEX_EAGER_LIMIT", "32K", "64K", "environment"]
        );
    }

    #[test]
    fn unknown_names_warn_and_invalid_values_fail() {
        let (text, status) = report(
            &BUILD,
            vars(&[
                ("REFLEX_EAGER_LIMT", "1"),
                ("REFLEX_LOG", "chatty"),
                ("REFLEX_SPIN_POLLS", "5"),
            ]),
        );
        assert_eq!(status, 1);
        assert!(text.contains(
            "warning: unknown setting REFLEX_EAGER_LIMT ignored (closest valid name: REFLEX_EAGER_LIMIT)"
        ));
        assert!(text.contains(
            "error: invalid REFLEX_LOG=\"chatty\": expected one of error|warn|info|debug"
        ));
        let log = text
            .lines()
            .find(|l| l.trim_start().starts_with("REFLEX_LOG"))
            .unwrap();
        assert!(log.contains("invalid"), "{log}");
        let spin = text
            .lines()
            .find(|l| l.contains("REFLEX_SPIN_POLLS"))
            .unwrap();
        assert!(
            spin.contains(" 5 ") && spin.contains("environment"),
            "{spin}"
        );
    }
}
