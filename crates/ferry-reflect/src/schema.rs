//! Run-time schemas: `.proto` messages as leaked [`ferry_wire::MessageDesc`]s, for tools that
//! encode and decode without a compile step (`ferry encode/decode/inspect`, servers that load
//! schemas at start).
//!
//! A [`Schema`] wraps a `prost_reflect` [`DescriptorPool`] (from [`crate::load`]) and turns a
//! message, and every message it reaches, into `&'static MessageDesc`s that
//! [`ferry_wire::DynamicMessage`] and [`ferry_wire::View`] work with:
//!
//! - each message becomes one [`MessageDesc::dynamic`], leaked, built once per [`Schema`]
//!   (recursive and mutually recursive messages refer to each other's descriptors);
//! - fields are given in ascending number order; map fields are `Label::Repeated` fields of
//!   their entry message (`map_entry: true`, key = 1, value = 2);
//! - real oneofs get dense indices (0, 1, ... in declaration order); proto3 `optional` fields,
//!   whose oneof is synthetic, are plain optional fields;
//! - proto2 `required` is [`Label::Required`]; enums are [`Kind::Enum`]; proto2 groups are
//!   nested messages.
//!
//! Descriptors are leaked on purpose: `MessageDesc` refers to its nested types as
//! `&'static`. A tool builds a handful of them once; do not build a new [`Schema`] per message.
//! Extensions are not fields of their message here and are ignored. Editions are refused.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use ferry_wire::{FieldDesc, Kind, Label, MessageDesc};
use prost_reflect::{Cardinality, DescriptorPool, FieldDescriptor, MessageDescriptor};

use crate::SchemaError;

/// A descriptor pool and the Ferry descriptors built from it so far.
pub struct Schema {
    pool: DescriptorPool,
    built: Mutex<HashMap<String, &'static MessageDesc>>,
}

impl core::fmt::Debug for Schema {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let built = self.built.lock().map(|b| b.len()).unwrap_or(0);
        f.debug_struct("Schema")
            .field("messages", &self.pool.all_messages().len())
            .field("built", &built)
            .finish()
    }
}

impl Schema {
    /// A schema over `pool`; nothing is built until asked for.
    pub fn new(pool: DescriptorPool) -> Self {
        Schema {
            pool,
            built: Mutex::new(HashMap::new()),
        }
    }

    /// Parses `files` (see [`crate::load`]) into a schema.
    pub fn load(
        files: &[impl AsRef<std::path::Path>],
        includes: &[impl AsRef<std::path::Path>],
    ) -> Result<Self, SchemaError> {
        crate::load(files, includes).map(Schema::new)
    }

    /// The descriptor pool.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// The `prost_reflect` descriptor of a message, by full name (`pkg.Outer.Inner`; a leading
    /// `.` is accepted). `None` if the pool has no such message.
    pub fn descriptor(&self, full_name: &str) -> Option<MessageDescriptor> {
        self.pool
            .get_message_by_name(full_name.strip_prefix('.').unwrap_or(full_name))
    }

    /// The Ferry descriptor of a message, by full name. `Ok(None)` if there is no such message.
    pub fn message(&self, full_name: &str) -> Result<Option<&'static MessageDesc>, SchemaError> {
        match self.descriptor(full_name) {
            Some(m) => self.desc(&m).map(Some),
            None => Ok(None),
        }
    }

    /// The Ferry descriptor of `message`, building it and every message it reaches that was
    /// not built before.
    pub fn desc(&self, message: &MessageDescriptor) -> Result<&'static MessageDesc, SchemaError> {
        // A panic while building leaves no half-built entry in the map (they are inserted at
        // the end), so a poisoned lock is still consistent.
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = built.get(message.full_name()) {
            return Ok(d);
        }

        // Every reachable message not built yet.
        let mut new = Vec::new();
        let mut seen = HashSet::new();
        let mut todo = vec![message.clone()];
        while let Some(m) = todo.pop() {
            if built.contains_key(m.full_name()) || !seen.insert(m.full_name().to_owned()) {
                continue;
            }
            check_syntax(&m)?;
            for f in m.fields() {
                if let prost_reflect::Kind::Message(child) = f.kind() {
                    todo.push(child);
                }
            }
            new.push(m);
        }

        // First an empty descriptor for each, so that fields can refer to any of them...
        let mut shells: HashMap<String, &'static MessageDesc> = HashMap::new();
        for m in &new {
            let name: &'static str = leak_str(m.full_name());
            let desc: &'static MessageDesc =
                Box::leak(Box::new(MessageDesc::dynamic(name, m.is_map_entry())));
            shells.insert(m.full_name().to_owned(), desc);
        }
        // ...then their fields.
        for m in &new {
            let lookup = |name: &str| shells.get(name).or_else(|| built.get(name)).copied();
            let fields: &'static [FieldDesc] = Box::leak(fields_of(m, lookup)?.into_boxed_slice());
            let desc = shells[m.full_name()];
            desc.set_fields(fields).map_err(|e| SchemaError::Unsupported {
                file: m.parent_file().name().to_owned(),
                line: 0,
                construct: format!("message `{}`", m.full_name()),
                why: e.to_string(),
            })?;
        }
        built.extend(shells);
        Ok(built[message.full_name()])
    }
}

/// Refuses files that are neither proto2 nor proto3 (editions).
fn check_syntax(m: &MessageDescriptor) -> Result<(), SchemaError> {
    let file = m.parent_file();
    match file.file_descriptor_proto().syntax.as_deref() {
        None | Some("proto2") | Some("proto3") => Ok(()),
        Some(other) => Err(SchemaError::Unsupported {
            file: file.name().to_owned(),
            line: 0,
            construct: format!("syntax `{other}`"),
            why: "Ferry reads proto2 and proto3 files; rewrite the file with `syntax = \"proto3\";`"
                .to_owned(),
        }),
    }
}

fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// The fields of `m` in ascending number order; `lookup` resolves nested message names.
fn fields_of(
    m: &MessageDescriptor,
    lookup: impl Fn(&str) -> Option<&'static MessageDesc>,
) -> Result<Vec<FieldDesc>, SchemaError> {
    // Dense indices for real oneofs; synthetic ones (proto3 `optional`) get none.
    let real_oneofs: Vec<String> = m
        .oneofs()
        .filter(|o| !o.is_synthetic())
        .map(|o| o.name().to_owned())
        .collect();
    let mut fields = Vec::with_capacity(m.fields().len());
    for f in m.fields() {
        let oneof = match f.containing_oneof() {
            Some(o) if !o.is_synthetic() => real_oneofs
                .iter()
                .position(|n| n == o.name())
                .and_then(|i| u16::try_from(i).ok()),
            _ => None,
        };
        fields.push(FieldDesc {
            name: leak_str(f.name()),
            number: f.number(),
            kind: kind_of(&f, &lookup)?,
            label: match f.cardinality() {
                Cardinality::Optional => Label::Optional,
                Cardinality::Required => Label::Required,
                Cardinality::Repeated => Label::Repeated,
            },
            oneof,
        });
    }
    fields.sort_by_key(|f| f.number);
    Ok(fields)
}

fn kind_of(
    f: &FieldDescriptor,
    lookup: &impl Fn(&str) -> Option<&'static MessageDesc>,
) -> Result<Kind, SchemaError> {
    use prost_reflect::Kind as P;
    Ok(match f.kind() {
        P::Double => Kind::Double,
        P::Float => Kind::Float,
        P::Int32 => Kind::Int32,
        P::Int64 => Kind::Int64,
        P::Uint32 => Kind::UInt32,
        P::Uint64 => Kind::UInt64,
        P::Sint32 => Kind::SInt32,
        P::Sint64 => Kind::SInt64,
        P::Fixed32 => Kind::Fixed32,
        P::Fixed64 => Kind::Fixed64,
        P::Sfixed32 => Kind::SFixed32,
        P::Sfixed64 => Kind::SFixed64,
        P::Bool => Kind::Bool,
        P::String => Kind::String,
        P::Bytes => Kind::Bytes,
        P::Enum(_) => Kind::Enum,
        P::Message(m) => match lookup(m.full_name()) {
            Some(d) => Kind::Message(d),
            // Unreachable: every message a field names was collected before.
            None => {
                return Err(SchemaError::Unsupported {
                    file: f.parent_file().name().to_owned(),
                    line: 0,
                    construct: format!("field `{}`", f.full_name()),
                    why: format!("its type `{}` was not found", m.full_name()),
                });
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (name, text) into a fresh directory and loads the first one.
    fn schema(test: &str, files: &[(&str, &str)]) -> Schema {
        let dir = std::env::temp_dir().join(format!("ferry-build-dynamic-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let s = Schema::load(&[dir.join(files[0].0)], &[&dir]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        s
    }

    fn msg(d: &FieldDesc) -> &'static MessageDesc {
        match d.kind {
            Kind::Message(m) => m,
            k => panic!("field {} is {k:?}, not a message", d.name),
        }
    }

    #[test]
    fn recursive_and_mutually_recursive() {
        let s = schema(
            "rec",
            &[(
                "r.proto",
                r#"syntax = "proto3"; package t;
                message Node { int32 value = 1; Node next = 2; repeated Node children = 3; }
                message A { B b = 1; }
                message B { A a = 7; string name = 1; }"#,
            )],
        );
        let node = s.message("t.Node").unwrap().unwrap();
        assert_eq!(node.name, "t.Node");
        assert!(core::ptr::eq(msg(node.field(2).unwrap()), node));
        assert!(core::ptr::eq(msg(node.field(3).unwrap()), node));
        assert_eq!(node.field(3).unwrap().label, Label::Repeated);

        let a = s.message(".t.A").unwrap().unwrap();
        let b = msg(a.field(1).unwrap());
        assert_eq!(b.name, "t.B");
        assert!(core::ptr::eq(msg(b.field(7).unwrap()), a));
        // Ascending number order whatever the declaration order.
        assert_eq!(b.fields().iter().map(|f| f.number).collect::<Vec<_>>(), [1, 7]);
        // Built once: asking again (directly or through another root) gives the same pointer.
        assert!(core::ptr::eq(s.message("t.B").unwrap().unwrap(), b));
        assert!(core::ptr::eq(s.message("t.A").unwrap().unwrap(), a));
        assert!(s.message("t.Missing").unwrap().is_none());
    }

    #[test]
    fn maps_oneofs_presence_enums() {
        let s = schema(
            "maps",
            &[(
                "m.proto",
                r#"syntax = "proto3"; package t;
                enum Color { RED = 0; BLUE = -3; }
                message M {
                  map<string, M> children = 1;
                  map<sint64, Color> colors = 2;
                  oneof a { int32 x = 3; string y = 4; }
                  optional uint64 opt = 5;
                  oneof b { bytes z = 6; }
                  Color color = 7;
                }"#,
            )],
        );
        let m = s.message("t.M").unwrap().unwrap();
        let children = m.field(1).unwrap();
        assert_eq!(children.label, Label::Repeated);
        let entry = msg(children);
        assert!(entry.map_entry);
        assert_eq!(entry.name, "t.M.ChildrenEntry");
        assert!(matches!(entry.field(1).unwrap().kind, Kind::String));
        assert!(core::ptr::eq(msg(entry.field(2).unwrap()), m));
        let colors = msg(m.field(2).unwrap());
        assert!(matches!(colors.field(1).unwrap().kind, Kind::SInt64));
        assert!(matches!(colors.field(2).unwrap().kind, Kind::Enum));
        assert_eq!(m.field(3).unwrap().oneof, Some(0));
        assert_eq!(m.field(4).unwrap().oneof, Some(0));
        // The synthetic oneof of `opt` sits between `a` and `b` but gets no index.
        assert_eq!(m.field(5).unwrap().oneof, None);
        assert_eq!(m.field(5).unwrap().label, Label::Optional);
        assert_eq!(m.field(6).unwrap().oneof, Some(1));
        assert!(matches!(m.field(7).unwrap().kind, Kind::Enum));
    }

    #[test]
    fn proto2_required_and_groups() {
        let s = schema(
            "p2",
            &[(
                "p.proto",
                r#"syntax = "proto2"; package t;
                message P {
                  required int32 id = 1;
                  optional string name = 2 [default = "x"];
                  repeated int64 nums = 3 [packed = true];
                  optional group G = 4 { optional int32 g = 1; }
                }"#,
            )],
        );
        let p = s.message("t.P").unwrap().unwrap();
        assert_eq!(p.field(1).unwrap().label, Label::Required);
        assert_eq!(p.field(2).unwrap().label, Label::Optional);
        assert_eq!(p.field(3).unwrap().label, Label::Repeated);
        assert_eq!(msg(p.field(4).unwrap()).name, "t.P.G");
    }

    #[test]
    fn well_known_type_import() {
        let s = schema(
            "wkt",
            &[
                (
                    "w.proto",
                    r#"syntax = "proto3"; package t;
                    import "google/protobuf/timestamp.proto";
                    import "other.proto";
                    message W { google.protobuf.Timestamp at = 1; o.Other other = 2; }"#,
                ),
                (
                    "other.proto",
                    r#"syntax = "proto3"; package o; message Other { bool ok = 1; }"#,
                ),
            ],
        );
        let w = s.message("t.W").unwrap().unwrap();
        let ts = msg(w.field(1).unwrap());
        assert_eq!(ts.name, "google.protobuf.Timestamp");
        assert_eq!(
            ts.fields().iter().map(|f| f.name).collect::<Vec<_>>(),
            ["seconds", "nanos"]
        );
        assert!(matches!(ts.field(1).unwrap().kind, Kind::Int64));
        assert_eq!(msg(w.field(2).unwrap()).name, "o.Other");
    }

    #[test]
    fn descriptors_work_with_the_runtime() {
        use ferry_wire::{DynamicMessage, Limits, Outgoing, Value, View};
        let s = schema(
            "rt",
            &[(
                "n.proto",
                r#"syntax = "proto3"; package t; message Node { int32 v = 1; Node next = 2; }"#,
            )],
        );
        let node = s.message("t.Node").unwrap().unwrap();
        let mut inner = DynamicMessage::new(node);
        inner.set(1, Value::I32(-5)).unwrap();
        let mut outer = DynamicMessage::new(node);
        outer.set(2, Value::Message(inner)).unwrap();
        let bytes = outer.to_vec().unwrap();
        let view = View::decode(&bytes, node, &Limits::default()).unwrap();
        let ctx = ferry_wire::Context::copy_only();
        assert_eq!(DynamicMessage::from_view(&view, ctx).unwrap(), outer);
    }
}
