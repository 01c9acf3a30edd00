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

/// A file: its name, its imports, and which of them (by index) are public.
type File<'a> = (&'a str, &'a [&'a str], &'a [i32]);

/// A descriptor set of `files`.
fn imports(files: &[File<'_>]) -> Vec<u8> {
    use prost::Message as _;
    let file = files
        .iter()
        .map(|(name, deps, public)| prost_types::FileDescriptorProto {
            name: Some((*name).into()),
            dependency: deps.iter().map(|d| (*d).into()).collect(),
            public_dependency: public.to_vec(),
            ..Default::default()
        })
        .collect();
    prost_types::FileDescriptorSet { file }.encode_to_vec()
}

/// Regression (found by the `offload_table` fuzz target, as a SIGSEGV after 5 M executions): a
/// file that publicly imports itself, or files whose public imports form a cycle, sent
/// `prost-reflect` 0.16 into unbounded recursion (its walk of public imports recurses into the
/// files it has already seen), which overflowed the stack. protoc refuses import cycles; so does
/// the table, by name.
#[test]
fn import_cycles_are_refused_not_a_stack_overflow() {
    let cases: [&[File<'_>]; 3] = [
        &[("a.proto", &["a.proto"], &[0])],
        &[("a.proto", &["b.proto"], &[0]), ("b.proto", &["a.proto"], &[0])],
        &[
            ("a.proto", &["b.proto"], &[]),
            ("b.proto", &["c.proto"], &[]),
            ("c.proto", &["a.proto"], &[]),
        ],
    ];
    for files in cases {
        match Table::new(imports(files), vec![], &[]) {
            Err(TableError::Descriptors(why)) => assert!(why.contains("imports itself"), "{files:?}: {why}"),
            other => panic!("{files:?}: {other:?}"),
        }
    }
}

/// Regression: public imports that form no cycle but many paths (each of 40 layers of two files
/// publicly imports both files of the next) made the same walk take time exponential in the
/// depth (2^40 steps). The table's own walk visits each file once.
#[test]
fn layered_public_imports_resolve_in_linear_time() {
    let names: Vec<[String; 2]> = (0..40)
        .map(|i| [format!("{i}a.proto"), format!("{i}b.proto")])
        .collect();
    let next: Vec<[&str; 2]> = names
        .iter()
        .skip(1)
        .map(|[a, b]| [a.as_str(), b.as_str()])
        .collect();
    let mut files: Vec<File<'_>> = Vec::new();
    for (i, [a, b]) in names.iter().enumerate() {
        let deps: &[&str] = next.get(i).map_or(&[], |n| n.as_slice());
        let public: &[i32] = if deps.is_empty() { &[] } else { &[0, 1] };
        files.push((a, deps, public));
        files.push((b, deps, public));
    }
    // The root imports every file, deepest first: the order that made the walk revisit them all.
    let all: Vec<&str> = names
        .iter()
        .rev()
        .flat_map(|[a, b]| [a.as_str(), b.as_str()])
        .collect();
    files.push(("root.proto", &all, &[]));
    assert!(Table::new(imports(&files), vec![], &[]).is_ok());
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
