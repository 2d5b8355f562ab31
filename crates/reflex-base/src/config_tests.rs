//! Tests of [`super`]: defaults, values and their sources, byte sizes, malformed and non-UTF-8 values, unknown names, the settings table.

use super::*;

fn load(vars: &[(&str, &str)]) -> Result<LoadedConfig, ConfigError> {
    Config::from_vars(vars.iter().copied())
}

#[test]
fn defaults_match_the_table() {
    let loaded = load(&[("PATH", "/bin"), ("HOME", "/root")]).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.warnings.is_empty());
    let c = loaded.config;
    assert_eq!(c.eager_limit, ByteSize(65536));
    assert_eq!(c.shm_ring_bytes.get(), 0);
    assert_eq!(c.single_copy, SingleCopy::Auto);
    assert_eq!(c.pipeline_chunk, ByteSize::kib(16));
    assert_eq!((c.spin_polls, c.yield_polls, c.sleep_us), (1000, 100, 1000));
    assert_eq!(c.log, LogLevel::Warn);
}

#[test]
fn values_and_sources_come_from_the_environment() {
    let loaded = load(&[
        ("REFLEX_EAGER_LIMIT", "32k"),
        ("REFLEX_SHM_RING_BYTES", " 4M "),
        ("REFLEX_SINGLE_COPY", "OFF"),
        ("REFLEX_SPIN_POLLS", "0"),
        ("REFLEX_LOG", "debug"),
    ])
    .unwrap();
    let c = &loaded.config;
    assert_eq!(c.eager_limit, ByteSize(32768));
    assert_eq!(c.shm_ring_bytes, ByteSize(4 << 20));
    assert_eq!(c.single_copy, SingleCopy::Off);
    assert_eq!(c.spin_polls, 0);
    assert_eq!(c.log, LogLevel::Debug);
    assert_eq!(c.source_of("REFLEX_EAGER_LIMIT"), Some(Source::Environment));
    assert_eq!(c.source_of("REFLEX_YIELD_POLLS"), Some(Source::Default));
    assert_eq!(c.source_of("REFLEX_NOPE"), None);
}

#[test]
fn byte_sizes_accept_suffixes_and_show_round_trips() {
    for (text, bytes) in [
        ("0", 0),
        ("100", 100),
        ("64k", 65536),
        ("64K", 65536),
        ("64KiB", 65536),
        ("4M", 4 << 20),
        ("4mb", 4 << 20),
        ("2G", 2 << 30),
        ("7b", 7),
    ] {
        let size = ByteSize::parse_setting(text).unwrap();
        assert_eq!(size, ByteSize(bytes), "{text}");
        assert_eq!(ByteSize::parse_setting(&size.show()), Some(size));
    }
    assert_eq!(ByteSize(16384).show(), "16K");
    assert_eq!(ByteSize(1000).show(), "1000");
    for bad in [
        "",
        "k",
        "-1",
        "1.5M",
        "12q",
        "1 M",
        "99999999999999999999",
        "18014398509481984G",
    ] {
        assert_eq!(ByteSize::parse_setting(bad), None, "{bad:?}");
    }
}

#[test]
fn malformed_values_are_errors_naming_variable_value_and_form() {
    let err = load(&[("REFLEX_EAGER_LIMIT", "12q"), ("REFLEX_LOG", "loud")]).unwrap_err();
    assert_eq!(err.invalid.len(), 2);
    assert_eq!(
        err.invalid[0].to_string(),
        "invalid REFLEX_EAGER_LIMIT=\"12q\": expected a byte size such as 16384, 64k or 4M"
    );
    assert_eq!(
        err.invalid[1].to_string(),
        "invalid REFLEX_LOG=\"loud\": expected one of error|warn|info|debug"
    );
    let err = load(&[("REFLEX_SPIN_POLLS", "-3")]).unwrap_err();
    assert!(
        err.to_string()
            .contains("a whole number from 0 to 4294967295"),
        "{err}"
    );
    // A later good value repairs an earlier bad one.
    assert!(load(&[("REFLEX_LOG", "loud"), ("REFLEX_LOG", "info")]).is_ok());
}

#[test]
fn unknown_names_warn_with_the_closest_valid_name() {
    let loaded = load(&[
        ("REFLEX_EAGER_LIMT", "1"),
        ("REFLEX_SPIN_POLL", "5"),
        ("REFLEXIVE", "x"),
    ])
    .unwrap();
    assert_eq!(
        loaded.warnings,
        [
            ConfigWarning::UnknownName {
                name: "REFLEX_EAGER_LIMT".into(),
                closest: "REFLEX_EAGER_LIMIT"
            },
            ConfigWarning::UnknownName {
                name: "REFLEX_SPIN_POLL".into(),
                closest: "REFLEX_SPIN_POLLS"
            },
        ]
    );
    assert_eq!(
        loaded.warnings[0].to_string(),
        "unknown setting REFLEX_EAGER_LIMT ignored (closest valid name: REFLEX_EAGER_LIMIT)"
    );
    assert_eq!(closest_name("REFLEX_SLEEP"), "REFLEX_SLEEP_US");
}

#[test]
fn non_utf8_values_are_invalid_not_panics() {
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"4\xffM");
    let err = Config::from_vars([(OsStr::new("REFLEX_EAGER_LIMIT"), bad)]).unwrap_err();
    assert_eq!(err.invalid[0].value, "4\u{fffd}M");
}

#[test]
fn describe_lists_every_setting_once() {
    let loaded = load(&[("REFLEX_SLEEP_US", "50")]).unwrap();
    let rows = loaded.config.describe();
    let names: Vec<_> = rows.iter().map(|r| r.name).collect();
    assert_eq!(names, SETTING_NAMES);
    let sleep = rows.iter().find(|r| r.name == "REFLEX_SLEEP_US").unwrap();
    assert_eq!(
        (sleep.value.as_str(), sleep.default.as_str()),
        ("50", "1000")
    );
    assert_eq!(sleep.source, Source::Environment);
    assert!(rows
        .iter()
        .all(|r| !r.doc.is_empty() && r.name.starts_with(PREFIX)));
}

#[test]
fn kinds_and_set_follow_the_types() {
    let mut c = Config::default();
    let rows = c.describe();
    let kind = |name: &str| rows.iter().find(|r| r.name == name).unwrap().kind;
    assert_eq!(kind("REFLEX_EAGER_LIMIT"), SettingKind::Bytes);
    assert_eq!(kind("REFLEX_SPIN_POLLS"), SettingKind::Number);
    assert_eq!(kind("REFLEX_TCP_STREAMS"), SettingKind::Number);
    assert_eq!(kind("REFLEX_CC"), SettingKind::Text);
    assert_eq!(
        kind("REFLEX_COLL_BARRIER"),
        SettingKind::Choice(&["auto", "dissemination", "pairwise"])
    );
    assert_eq!(c.set("REFLEX_COLL_BARRIER", "pairwise"), Some(Ok(())));
    assert_eq!(c.coll_barrier, BarrierAlgo::Pairwise);
    assert_eq!(
        c.source_of("REFLEX_COLL_BARRIER"),
        Some(Source::Environment)
    );
    assert!(matches!(c.set("REFLEX_COLL_BARRIER", "tree"), Some(Err(_))));
    assert_eq!(c.set("REFLEX_NOPE", "1"), None);
}

#[test]
fn edit_distance_is_levenshtein() {
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("same", "same"), 0);
}
