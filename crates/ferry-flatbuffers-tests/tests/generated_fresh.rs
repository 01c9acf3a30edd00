//! The committed `src/generated/interop_generated.rs` is what flatc 25.12.19 makes of
//! `schema/interop.fbs` today (`flatc --rust --gen-object-api`, as `regen.sh` runs it): a
//! schema edited without regenerating fails here. Skips (prints why) without flatc, unless
//! `FERRY_REQUIRE_TOOLS=1`.

mod common;

use std::fs;

use common::tools;
use ferry_flatbuffers_tests::{GENERATED, SCHEMA};
use ferry_testkit::Scratch;

#[test]
fn committed_generated_code_is_fresh() {
    let Some(flatc) = tools::require_flatc() else {
        return;
    };
    let dir = Scratch::new("fb-fresh");
    tools::flatc(&flatc, &["--rust", "--gen-object-api"], &dir.0, SCHEMA);
    let fresh = fs::read_to_string(dir.0.join("interop_generated.rs")).expect("flatc's output");
    let committed = fs::read_to_string(GENERATED).expect("the committed file");
    if fresh != committed {
        let line = fresh
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "(one is a prefix of the other)".to_owned(),
                |i| format!("{}", i + 1),
            );
        panic!(
            "src/generated/interop_generated.rs is stale (first difference at line {line}): \
             run crates/ferry-flatbuffers-tests/regen.sh"
        );
    }
}
