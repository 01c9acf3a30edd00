//! The generated code of `ferry-codegen-tests`, built under edition 2021: clippy and the
//! workspace lints (`-D warnings` in CI) check it builds warning-free there too.
#![forbid(unsafe_code)]

/// The schemas of `../proto/`.
pub mod generated {
    include!(concat!(env!("OUT_DIR"), "/ferry_protos.rs"));
}

/// The golden files of `ferry-build`.
pub mod golden {
    /// `kv.proto`.
    pub mod kv {
        include!("../../../ferry-build/tests/golden/kv.rs");
    }
    /// `nested.proto`.
    pub mod nested {
        include!("../../../ferry-build/tests/golden/nested.rs");
    }
    /// `tree.proto`.
    pub mod tree {
        include!("../../../ferry-build/tests/golden/tree.rs");
    }
}

#[cfg(test)]
mod tests {
    use super::generated::ferry::test as t;
    use ferry::Message as _;

    #[test]
    fn a_generated_message_round_trips_under_edition_2021() {
        use ferry::Outgoing;
        let ctx = ferry::Context::copy_only();
        let names: Vec<&str> = t::ALL_KINDS_DESC.fields().iter().map(|f| f.name).collect();
        assert!(!names.is_empty());
        let m = t::AllKinds::new(ctx);
        let bytes = m.to_vec().unwrap();
        assert!(t::AllKinds::decode(&bytes).is_ok());
    }
}
