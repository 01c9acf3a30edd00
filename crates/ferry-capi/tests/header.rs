//! `include/ferry.h` is what cbindgen makes of the crate's sources now (the cbindgen library,
//! pinned by Cargo.lock, rather than a tool CI would have to install). A stale header fails
//! with the command that rewrites it.

use std::path::Path;

#[test]
fn header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the sources");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = crate_dir.join("../../include/ferry.h");
    if std::env::var_os("FERRY_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/ferry.h");
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/ferry.h is stale: run `FERRY_BLESS=1 cargo test -p ferry-capi --test header` and commit it"
    );
}
