//! The description table a host sends the engine: built from a host's `Description`, checked
//! entirely, with a typed error naming what is wrong.

use ferry::Context;
use ferry::Outgoing as _;
use ferry::wire::Message as _;
use ferry_offload::DEMO_DESCRIPTORS;
use ferry_offload::generated::ferry::offload::{Description, Method};
use ferry_offload::table::{Table, TableError};

const DEMO: &str = "ferry.offload.demo.Demo";

/// The demo's description, as the host's `Describe` writes it, in Ferry's wire format.
fn description(services: &[&str], methods: &[(&str, u32)]) -> Vec<u8> {
    let ctx = Context::copy_only();
    let mut d = Description::new(ctx);
    d.set_file_descriptor_set(DEMO_DESCRIPTORS);
    for s in services {
        d.append_services(*s);
    }
    for (path, id) in methods {
        let mut m = Method::new(ctx);
        m.set_path(*path);
        m.set_id(*id);
        d.append_methods(m);
    }
    d.to_vec().expect("encodes")
}

fn table(services: &[&str], methods: &[(&str, u32)]) -> Result<Table, TableError> {
    let bytes = description(services, methods);
    Table::from_description(&Description::decode(&bytes).expect("a valid Ferry message"))
}

#[test]
fn the_demo_table_routes_every_method() {
    let paths =
        ["Echo", "Fail", "Sleep", "SendSmall", "SendInts", "SendChars"].map(|m| format!("/{DEMO}/{m}"));
    let methods: Vec<(&str, u32)> = paths
        .iter()
        .map(|p| (p.as_str(), u32::from(ferry::transport::method_id(p))))
        .collect();
    let t = table(&[DEMO], &methods).expect("valid");
    assert_eq!(t.services(), [DEMO]);
    assert_eq!(t.routes().count(), 6);
    let echo = t.route(&format!("/{DEMO}/Echo")).expect("routed");
    assert_eq!(echo.input.full_name(), "ferry.offload.demo.Kinds");
    assert_eq!(echo.output.full_name(), "ferry.offload.demo.Kinds");
    assert_eq!(echo.shape, ferry::rpc::Shape::Unary);
    assert!(t.route("/ferry.offload.demo.Demo/Nope").is_none());
}

#[test]
fn each_route_has_its_methods_shape() {
    use ferry::rpc::Shape;
    let descriptors = include_bytes!(concat!(env!("OUT_DIR"), "/streams_descriptors.bin"));
    let service = "ferry.offload.streams.Streams";
    let shapes = [
        ("Unary", Shape::Unary),
        ("Collect", Shape::ClientStreaming),
        ("Spread", Shape::ServerStreaming),
        ("Chat", Shape::Bidirectional),
    ];
    let methods: Vec<(String, u32)> = (0..)
        .zip(shapes)
        .map(|(id, (m, _))| (format!("/{service}/{m}"), id))
        .collect();
    let t = Table::new(descriptors.to_vec(), vec![service.into()], &methods).expect("valid");
    for (m, shape) in shapes {
        let route = t.route(&format!("/{service}/{m}")).expect("routed");
        assert_eq!(route.shape, shape, "{m}");
    }
}

#[test]
fn bad_tables_are_refused_naming_what_is_wrong() {
    let echo = format!("/{DEMO}/Echo");
    let fail = format!("/{DEMO}/Fail");
    assert!(matches!(
        table(&["no.Such"], &[]),
        Err(TableError::UnknownService(s)) if s == "no.Such"
    ));
    for (path, why) in [
        ("Echo", "not of the form"),
        ("/ferry.offload.Host/Describe", "its service is not listed"),
        ("/ferry.offload.demo.Demo/Nope", "no such method"),
    ] {
        match table(&[DEMO], &[(path, 1)]) {
            Err(TableError::Method { reason, .. }) => assert!(reason.contains(why), "{path}: {reason}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    assert!(matches!(
        table(&[DEMO], &[(&echo, 70_000)]),
        Err(TableError::Method { reason, .. }) if reason.contains("16 bits")
    ));
    assert!(matches!(
        table(&[DEMO], &[(&echo, 7), (&fail, 7)]),
        Err(TableError::Duplicate { what: "id", .. })
    ));
    assert!(matches!(
        table(&[DEMO], &[(&echo, 7), (&echo, 8)]),
        Err(TableError::Duplicate { what: "path", .. })
    ));
    assert!(matches!(
        Table::new(b"\xff\xff".to_vec(), vec![], &[]),
        Err(TableError::Descriptors(_))
    ));
    let too_many: Vec<String> = (0..=ferry_offload::table::MAX_SERVICES)
        .map(|i| format!("s{i}"))
        .collect();
    assert!(matches!(
        Table::new(DEMO_DESCRIPTORS.to_vec(), too_many, &[]),
        Err(TableError::Limit { what: "services", .. })
    ));
}

#[test]
fn the_host_service_validates_its_own_table() {
    assert!(ferry_offload::host::describe(DEMO_DESCRIPTORS, &[DEMO]).is_ok());
    assert!(matches!(
        ferry_offload::host::describe(DEMO_DESCRIPTORS, &["ferry.offload.demo.Nope"]),
        Err(TableError::UnknownService(_))
    ));
}

/// Regression (found by the `offload_table` fuzz target): a descriptor set with a file whose
/// `syntax` is unknown made `prost-reflect` panic (index out of bounds) while reporting it.
#[test]
fn a_file_of_unknown_syntax_is_refused_not_a_panic() {
    use prost::Message as _;
    let mut set = prost_types::FileDescriptorSet::decode(DEMO_DESCRIPTORS).expect("the demo's set");
    set.file.push(prost_types::FileDescriptorProto {
        name: Some("later.proto".into()),
        syntax: Some("editions".into()),
        ..Default::default()
    });
    match Table::new(set.encode_to_vec(), vec![DEMO.into()], &[]) {
        Err(TableError::Descriptors(why)) => {
            assert!(why.contains("later.proto") && why.contains("editions"), "{why}")
        }
        other => panic!("{other:?}"),
    }
}

/// Writes the fuzz target's seed: the demo's description (form byte 0, then the message).
/// `cargo test -p ferry-offload --test table write_fuzz_seed -- --ignored`
#[test]
#[ignore = "writes fuzz/seeds/offload_table"]
fn write_fuzz_seed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/offload_table");
    std::fs::create_dir_all(&dir).unwrap();
    let echo = format!("/{DEMO}/Echo");
    let seed = [vec![0], description(&[DEMO], &[(&echo, 1)])].concat();
    std::fs::write(dir.join("demo.bin"), seed).unwrap();
}
