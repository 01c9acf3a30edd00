//! Run-time schemas: `.proto` messages as [`ferry_wire::MessageDesc`]s, for tools that
//! encode and decode without a compile step (`ferry encode/decode/inspect`, servers that load
//! schemas at start and reload them).
//!
//! A [`Schema`] wraps a `prost_reflect` [`DescriptorPool`] (from [`crate::load`]) and, when it
//! is made, turns every message of the pool into a `MessageDesc` that
//! [`ferry_wire::DynamicMessage`] and [`ferry_wire::View`] work with:
//!
//! - each message becomes one [`MessageDesc::with_cell`] (recursive and mutually recursive
//!   messages refer to each other's descriptors);
//! - fields are given in ascending number order; map fields are `Label::Repeated` fields of
//!   their entry message (`map_entry: true`, key = 1, value = 2);
//! - real oneofs get dense indices (0, 1, ... in declaration order); proto3 `optional` fields,
//!   whose oneof is synthetic, are plain optional fields;
//! - proto2 `required` is [`Label::Required`]; enums are [`Kind::Enum`]; proto2 groups are
//!   nested messages.
//!
//! Extensions are not fields of their message here and are ignored. Editions are refused.
//!
//! # Who owns the descriptors
//!
//! ```text
//! Schema ── pool: DescriptorPool
//!        └─ arena (bump allocator): every MessageDesc, FieldDesc, name and FieldsCell
//!             ^ borrowed as &'s MessageDesc<'s> by schema.message(..) ─> View<'s>, DynamicMessage<'s>
//! ```
//!
//! Descriptors are built once, into an arena the schema owns, and freed with it: a program
//! that reloads its schemas drops the old [`Schema`] and frees everything it built. Views and
//! dynamic messages borrow the descriptor they were made with, so the compiler refuses one
//! that would outlive its schema:
//!
//! ```compile_fail,E0505
//! # use ferry_reflect::Schema;
//! # use ferry_wire::DynamicMessage;
//! # fn reload(schema: Schema) {
//! let desc = schema.message("t.Node").unwrap();
//! let message = DynamicMessage::new(desc);
//! drop(schema); // error[E0505]: cannot move out of `schema` because it is borrowed
//! assert_eq!(message.iter().count(), 0);
//! # }
//! ```
//!
//! (The same code without the `drop` compiles; a [`ferry_wire::View`] is held back the same way.)

use std::collections::HashMap;

use bumpalo_herd::{Herd, Member};
use ferry_wire::{FieldDesc, FieldsCell, Kind, Label, MessageDesc};
use prost_reflect::{Cardinality, DescriptorPool, FieldDescriptor, MessageDescriptor};

use crate::SchemaError;

/// Every message's descriptor, by full name (names and descriptors live in the arena).
type Descs<'a> = HashMap<&'a str, &'a MessageDesc<'a>>;

self_cell::self_cell!(
    /// The arena and the descriptors built in it, which borrow it.
    struct Built {
        owner: Herd,
        #[covariant]
        dependent: Descs,
    }
);

/// A descriptor pool and the Ferry descriptors of all its messages, which it owns.
///
/// ```
/// # use ferry_reflect::Schema;
/// # use ferry_wire::DynamicMessage;
/// # fn reload(schema: Schema) {
/// let desc = schema.message("t.Node").unwrap();
/// let message = DynamicMessage::new(desc);
/// assert_eq!(message.iter().count(), 0);
/// drop(schema); // after the last use of `message`
/// # }
/// ```
pub struct Schema {
    pool: DescriptorPool,
    built: Built,
}

impl core::fmt::Debug for Schema {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Schema")
            .field("messages", &self.built.borrow_dependent().len())
            .finish_non_exhaustive()
    }
}

impl Schema {
    /// A schema over `pool`, with the descriptor of every message built. Fails if a file of
    /// the pool is neither proto2 nor proto3 (editions).
    pub fn new(pool: DescriptorPool) -> Result<Self, SchemaError> {
        for file in pool.files() {
            check_syntax(&file)?;
        }
        let built = Built::try_new(Herd::new(), |herd| build(&pool, &herd.get()))?;
        Ok(Schema { pool, built })
    }

    /// Parses `files` (see [`crate::load`]) into a schema.
    pub fn load(
        files: &[impl AsRef<std::path::Path>],
        includes: &[impl AsRef<std::path::Path>],
    ) -> Result<Self, SchemaError> {
        Schema::new(crate::load(files, includes)?)
    }

    /// The descriptor pool.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// The `prost_reflect` descriptor of a message, by full name (`pkg.Outer.Inner`; a leading
    /// `.` is accepted). `None` if the pool has no such message.
    pub fn descriptor(&self, full_name: &str) -> Option<MessageDescriptor> {
        self.pool.get_message_by_name(trim(full_name))
    }

    /// The Ferry descriptor of a message, by full name (as for [`descriptor`](Self::descriptor)).
    /// It borrows the schema: so do the views and dynamic messages made with it.
    pub fn message(&self, full_name: &str) -> Option<&MessageDesc<'_>> {
        self.built.borrow_dependent().get(trim(full_name)).copied()
    }
}

fn trim(full_name: &str) -> &str {
    full_name.strip_prefix('.').unwrap_or(full_name)
}

/// Builds the descriptor of every message of `pool` in `arena`.
///
/// The arena never runs destructors: what it holds owns no other memory (names, `Copy`
/// fields, descriptors, and cells holding a reference).
fn build<'a>(pool: &DescriptorPool, arena: &Member<'a>) -> Result<Descs<'a>, SchemaError> {
    let messages: Vec<MessageDescriptor> = pool.all_messages().collect();
    // First a descriptor over an empty cell for each, so that fields can refer to any of them...
    let mut descs: Descs<'a> = HashMap::with_capacity(messages.len());
    let mut cells: Vec<&'a FieldsCell<'a>> = Vec::with_capacity(messages.len());
    for m in &messages {
        let cell: &'a FieldsCell<'a> = arena.alloc(FieldsCell::new());
        let name: &'a str = arena.alloc_str(m.full_name());
        descs.insert(
            name,
            arena.alloc(MessageDesc::with_cell(name, cell, m.is_map_entry())),
        );
        cells.push(cell);
    }
    // ...then their fields.
    for (m, cell) in messages.iter().zip(cells) {
        let fields = arena.alloc_slice_copy(&fields_of(m, arena, &descs)?);
        cell.set(fields).map_err(|e| SchemaError::Unsupported {
            file: m.parent_file().name().to_owned(),
            line: 0,
            construct: format!("message `{}`", m.full_name()),
            why: e.to_string(),
        })?;
    }
    Ok(descs)
}

/// Refuses files that are neither proto2 nor proto3 (editions).
fn check_syntax(file: &prost_reflect::FileDescriptor) -> Result<(), SchemaError> {
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

/// The fields of `m` in ascending number order, names in `arena`; `descs` resolves nested
/// message names.
fn fields_of<'a>(
    m: &MessageDescriptor,
    arena: &Member<'a>,
    descs: &Descs<'a>,
) -> Result<Vec<FieldDesc<'a>>, SchemaError> {
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
            name: arena.alloc_str(f.name()),
            number: f.number(),
            kind: kind_of(&f, descs)?,
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

fn kind_of<'a>(f: &FieldDescriptor, descs: &Descs<'a>) -> Result<Kind<'a>, SchemaError> {
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
        P::Message(m) => match descs.get(m.full_name()) {
            Some(d) => Kind::Message(d),
            // Unreachable: every message of the pool has a descriptor.
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

    fn msg<'a>(d: &FieldDesc<'a>) -> &'a MessageDesc<'a> {
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
        let node = s.message("t.Node").unwrap();
        assert_eq!(node.name, "t.Node");
        assert!(core::ptr::eq(msg(node.field(2).unwrap()), node));
        assert!(core::ptr::eq(msg(node.field(3).unwrap()), node));
        assert_eq!(node.field(3).unwrap().label, Label::Repeated);

        let a = s.message(".t.A").unwrap();
        let b = msg(a.field(1).unwrap());
        assert_eq!(b.name, "t.B");
        assert!(core::ptr::eq(msg(b.field(7).unwrap()), a));
        // Ascending number order whatever the declaration order.
        assert_eq!(b.fields().iter().map(|f| f.number).collect::<Vec<_>>(), [1, 7]);
        // One descriptor per message: asking again (directly or through another root) gives the
        // same pointer.
        assert!(core::ptr::eq(s.message("t.B").unwrap(), b));
        assert!(core::ptr::eq(s.message("t.A").unwrap(), a));
        assert!(s.message("t.Missing").is_none());
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
        let m = s.message("t.M").unwrap();
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
        let p = s.message("t.P").unwrap();
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
        let w = s.message("t.W").unwrap();
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
        let node = s.message("t.Node").unwrap();
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
