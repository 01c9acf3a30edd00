//! Golden files: the generated code of a few representative schemas, checked in.
//!
//! `FERRY_BLESS=1 cargo test -p ferry-build --test golden` rewrites the expected files.
//! `crates/ferry-codegen-tests` compiles them, so they are also checked to build warning-free.

use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn check(stem: &str) {
    let dir = golden_dir();
    let proto = dir.join(format!("{stem}.proto"));
    let pool = ferry_build::load(&[&proto], &[&dir]).expect("golden schema loads");
    let files = ferry_build::Config::new()
        .file_name(format!("{stem}.rs"))
        .generate(&pool)
        .expect("golden schema generates");
    let out = tempfile::tempdir().expect("temp dir");
    ferry_build::write_files(out.path(), &files).expect("write");
    let got = std::fs::read_to_string(out.path().join(format!("{stem}.rs"))).expect("generated file");
    let expected_path = dir.join(format!("{stem}.rs"));
    if std::env::var_os("FERRY_BLESS").is_some() {
        std::fs::write(&expected_path, &got).expect("bless");
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    if got != expected {
        let line = got
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| got.lines().count().min(expected.lines().count()));
        panic!(
            "{stem}.rs differs from the golden file at line {} (run with FERRY_BLESS=1 to accept):\n  got:      {:?}\n  expected: {:?}",
            line + 1,
            got.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}

#[test]
fn simple_kv() {
    check("kv");
}

#[test]
fn nested_enums_oneof() {
    check("nested");
}

#[test]
fn maps_recursion_proto2_defaults() {
    check("tree");
}
