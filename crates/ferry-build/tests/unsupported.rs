//! Constructs Ferry does not support are build errors naming the file, line and construct.

use std::path::Path;

fn compile(name: &str, source: &str) -> Result<Vec<ferry_build::GeneratedFile>, ferry_build::BuildError> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(name), source).expect("write proto");
    let pool = ferry_build::load(&[Path::new(name)], &[dir.path()])?;
    ferry_build::Config::new().generate(&pool)
}

fn unsupported(name: &str, source: &str) -> (u32, String) {
    match compile(name, source) {
        Err(ferry_build::BuildError::Schema(ferry_build::SchemaError::Unsupported {
            file,
            line,
            construct,
            ..
        })) => {
            assert_eq!(file, name);
            (line, construct)
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn groups_are_refused_with_their_line() {
    let (line, construct) = unsupported(
        "g.proto",
        "syntax = \"proto2\";\npackage g;\nmessage M {\n  optional group Inner = 1 {\n    optional int32 x = 2;\n  }\n}\n",
    );
    assert_eq!(line, 4);
    assert!(construct.contains("group"), "{construct}");
}

#[test]
fn extensions_are_refused_with_their_line() {
    let (line, construct) = unsupported(
        "e.proto",
        "syntax = \"proto2\";\npackage e;\nmessage M {\n  extensions 100 to 200;\n}\nextend M {\n  optional int32 ext = 100;\n}\n",
    );
    assert_eq!(line, 7);
    assert!(construct.contains("extension `e.ext`"), "{construct}");
}

#[test]
fn editions_are_refused() {
    match compile(
        "ed.proto",
        "edition = \"2023\";\npackage ed;\nmessage M { int32 x = 1; }\n",
    ) {
        Err(ferry_build::BuildError::Schema(ferry_build::SchemaError::Unsupported { construct, .. })) => {
            assert_eq!(construct, "editions")
        }
        // protox may refuse editions itself; either way it is an error, not generated code.
        Err(ferry_build::BuildError::Schema(ferry_build::SchemaError::Parse(msg))) => {
            assert!(msg.contains("ed.proto"), "{msg}")
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn file_per_package_names_files_like_prost() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("a.proto"),
        "syntax = \"proto3\";\npackage x.y;\nmessage A { int32 v = 1; }\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("b.proto"),
        "syntax = \"proto3\";\nmessage B { int32 v = 1; }\n",
    )
    .expect("write");
    let pool = ferry_build::load(&[Path::new("a.proto"), Path::new("b.proto")], &[dir.path()]).expect("load");
    let files = ferry_build::Config::new()
        .file_per_package(true)
        .generate(&pool)
        .expect("generate");
    let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["_.rs", "x.y.rs"]);
    assert!(files.iter().all(|f| f.contents.starts_with(ferry_build::HEADER)));
}

/// Write-if-changed, checked without sleeping: the file's mtime is set far in the past, so any
/// rewrite (which stamps the current time) shows, however coarse the file system's clock.
#[test]
fn unchanged_files_are_not_rewritten() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut file = ferry_build::GeneratedFile {
        name: "x.rs".into(),
        contents: "// x\n".into(),
    };
    let path = dir.path().join("x.rs");
    let long_ago = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    let mtime = || {
        std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("mtime")
    };
    let age = |time| {
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(time))
            .expect("set mtime")
    };
    ferry_build::write_files(dir.path(), std::slice::from_ref(&file)).expect("write");
    age(long_ago);
    ferry_build::write_files(dir.path(), std::slice::from_ref(&file)).expect("write again");
    assert_eq!(mtime(), long_ago, "same contents: not rewritten");

    file.contents.push_str("// y\n");
    ferry_build::write_files(dir.path(), std::slice::from_ref(&file)).expect("write changed");
    assert_ne!(mtime(), long_ago, "new contents: rewritten");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), file.contents);
}

#[test]
fn service_generator_output_is_placed_in_the_package() {
    struct Marker;
    impl ferry_build::ServiceGenerator for Marker {
        fn generate(&mut self, service: &ferry_build::Service, buf: &mut String) {
            buf.push_str(&format!(
                "/// Marker.\npub const {}_METHODS: usize = {};\n",
                service.name.to_uppercase(),
                service.methods.len()
            ));
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("s.proto"),
        "syntax = \"proto3\";\npackage s;\nmessage Q {}\nservice Svc { rpc A(Q) returns (Q); rpc B(Q) returns (Q); }\n",
    )
    .expect("write");
    let pool = ferry_build::load(&[Path::new("s.proto")], &[dir.path()]).expect("load");
    let files = ferry_build::Config::new()
        .service_generator(Box::new(Marker))
        .generate(&pool)
        .expect("generate");
    assert!(files[0].contents.contains("pub const SVC_METHODS: usize = 2;"));
    // The id of `/s.Svc/B`: FNV-1a folded to 16 bits, computed outside Ferry.
    assert!(files[0].contents.contains("(\"B\", 16702u16, \"s.Q\", \"s.Q\")"));
}

/// Method ids are 16-bit hashes of the method's path; two methods whose ids collide (`M106`
/// and `M293` of `t.S`, found by search) would share a frame kind, so the build fails and
/// names both.
#[test]
fn colliding_method_ids_are_refused_naming_both() {
    let source = "syntax = \"proto3\";\npackage t;\nmessage E {}\nservice S {\n  rpc M106(E) returns (E);\n  rpc M293(E) returns (E);\n}\n";
    match compile("c.proto", source) {
        Err(ferry_build::BuildError::Codegen(msg)) => {
            assert!(msg.contains("c.proto:6"), "{msg}");
            assert!(msg.contains("/t.S/M106") && msg.contains("/t.S/M293"), "{msg}");
            assert!(
                msg.contains(&ferry_transport::method_id("/t.S/M106").to_string()),
                "{msg}"
            );
        }
        other => panic!("expected a collision error, got {other:?}"),
    }
    // Renamed, the same service builds.
    let fine = source.replace("M293", "M294");
    compile("c.proto", &fine).expect("distinct ids");
}

/// The built-in generator serves streaming methods; only its tonic-style trait, which covers
/// unary methods, refuses a service with one, naming the file, line and method.
#[test]
fn streaming_methods_build_and_the_tonic_style_trait_refuses_them() {
    for (decl, kind, shape) in [
        (
            "rpc Watch(Q) returns (stream Q);",
            "server-streaming",
            "ServerStreaming",
        ),
        (
            "rpc Watch(stream Q) returns (Q);",
            "client-streaming",
            "ClientStreaming",
        ),
        (
            "rpc Watch(stream Q) returns (stream Q);",
            "bidirectional-streaming",
            "Bidirectional",
        ),
    ] {
        let source = format!(
            "syntax = \"proto3\";\npackage ferry.test;\nmessage Q {{}}\nservice Echo {{\n  rpc Say(Q) returns (Q);\n  {decl}\n}}\n"
        );
        let files = compile("s.proto", &source).expect("streaming methods build");
        let code = &files[0].contents;
        assert!(code.contains(&format!("Shape::{shape}")), "{kind}: {code}");

        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("s.proto"), &source).expect("write");
        let pool = ferry_build::load(&[Path::new("s.proto")], &[dir.path()]).expect("load");
        let err = ferry_build::Config::new()
            .service_generator(Box::new(ferry_build::RpcGenerator::new().tonic_style(true)))
            .generate(&pool)
            .expect_err("the tonic-style trait refuses streams");
        let text = err.to_string();
        assert!(text.starts_with("s.proto:6: "), "{text}");
        assert!(
            text.contains(&format!("{kind} method `ferry.test.Echo/Watch`")),
            "{text}"
        );
        assert!(text.contains("tonic-style trait"), "{text}");
    }
}

/// Without the built-in generator a service gets its description module only (and a
/// streaming method is described, not refused); a replacement generator's output takes the
/// built-in one's place.
#[test]
fn the_built_in_service_generator_can_be_turned_off_or_replaced() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("s.proto"),
        "syntax = \"proto3\";\npackage s;\nmessage Q {}\nservice Svc {\n  rpc A(Q) returns (Q);\n  rpc W(Q) returns (stream Q);\n}\n",
    )
    .expect("write");
    let pool = ferry_build::load(&[Path::new("s.proto")], &[dir.path()]).expect("load");
    let files = ferry_build::Config::new()
        .no_service_generator()
        .generate(&pool)
        .expect("described, not refused");
    let code = &files[0].contents;
    assert!(code.contains("pub mod svc_service"), "{code}");
    assert!(code.contains("pub const W: u16"), "{code}");
    assert!(!code.contains("pub trait"), "{code}");
    assert!(
        !code.contains("::ferry::rpc"),
        "needs only the wire runtime: {code}"
    );

    struct Nothing;
    impl ferry_build::ServiceGenerator for Nothing {
        fn generate(&mut self, _: &ferry_build::Service, _: &mut String) {}
    }
    let files = ferry_build::Config::new()
        .service_generator(Box::new(Nothing))
        .generate(&pool)
        .expect("a replacement accepts streaming unless it says otherwise");
    assert!(!files[0].contents.contains("pub trait"));
}

/// What a service generator is told: Rust names free in the package (a message `Echo` and a
/// service `echo` would share `Echo`), method names escaped and deduplicated, and type paths
/// relative to the package module, where the generated code goes.
#[test]
fn service_generators_get_collision_free_rust_names_and_package_relative_paths() {
    use std::cell::RefCell;
    use std::rc::Rc;
    struct Record(Rc<RefCell<Vec<ferry_build::Service>>>);
    impl ferry_build::ServiceGenerator for Record {
        fn generate(&mut self, service: &ferry_build::Service, _: &mut String) {
            self.0.borrow_mut().push(service.clone());
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("a")).expect("dir");
    std::fs::write(
        dir.path().join("a/common.proto"),
        "syntax = \"proto3\";\npackage a.common;\nmessage Key { string k = 1; }\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("a/x.proto"),
        "syntax = \"proto3\";\npackage a.x;\nimport \"a/common.proto\";\n\
         message Echo { message Inner {} }\nmessage EchoServer {}\n\
         service echo {\n  rpc Type(Echo) returns (a.common.Key);\n  rpc New(Echo.Inner) returns (Echo);\n  rpc Name(Echo) returns (Echo);\n  rpc name(Echo) returns (Echo);\n}\n",
    )
    .expect("write");
    let pool = ferry_build::load(&[Path::new("a/x.proto")], &[dir.path()]).expect("load");
    let seen = Rc::new(RefCell::new(Vec::new()));
    ferry_build::Config::new()
        .service_generator(Box::new(Record(seen.clone())))
        .generate(&pool)
        .expect("generate");
    let seen = seen.borrow();
    let s = &seen[0];
    assert_eq!((s.file.as_str(), s.line), ("a/x.proto", 6));
    assert_eq!(s.runtime, "::ferry");
    // `Echo` and `EchoServer` are messages: all five items move to the next free number.
    assert_eq!(
        [
            &s.rust.server_trait,
            &s.rust.server,
            &s.rust.async_server_trait,
            &s.rust.async_server,
            &s.rust.client
        ],
        [
            "Echo2",
            "Echo2Server",
            "AsyncEcho2",
            "AsyncEcho2Server",
            "Echo2Client"
        ]
    );
    let m: Vec<(&str, &str, &str, &str, &str)> = s
        .methods
        .iter()
        .map(|m| {
            (
                m.rust_name.as_str(),
                m.id_const.as_str(),
                m.input_rust_type.as_str(),
                m.output_rust_type.as_str(),
                m.output_rust_view.as_str(),
            )
        })
        .collect();
    assert_eq!(
        m,
        [
            (
                "r#type",
                "TYPE",
                "Echo",
                "super::common::Key",
                "super::common::KeyView"
            ),
            ("new_2", "NEW_2", "echo::Inner", "Echo", "EchoView"),
            ("name", "NAME_2", "Echo", "Echo", "EchoView"),
            ("name_2", "NAME_2_2", "Echo", "Echo", "EchoView"),
        ]
    );
    assert_eq!(s.methods[0].path, "/a.x.echo/Type");
    assert_eq!(s.methods[3].line, 10);
}
