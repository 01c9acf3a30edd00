//! One regression test per bug found in review, named for the bug.

mod common;
use common::pool;
use ferry_wire::sample::{ALL_KINDS, Record};
use ferry_wire::{Context, HybridBytes, Limits, Outgoing, View};
use ferry_wire::{DecodeErrorKind, DynamicMessage, Encode, EncodeError, Value, Visitor};
use ferry_wire::{Message as _, MessageView as _};

/// `View::messages` on a field that is not a repeated message used to fall back to the parent's
/// descriptor and read unvalidated peer bytes as pointers (a panic, or a stack overflow).
#[test]
fn list_accessors_only_read_fields_validated_as_lists() {
    let ctx = Context::copy_only();
    let mut m = DynamicMessage::new(&ALL_KINDS);
    // `bytes` field 16 holds what would look like a pointer array to a list reader.
    let fake = [0xffu8; 64];
    m.set(16, Value::Bytes(HybridBytes::new(&fake, ctx))).unwrap();
    m.set(21, Value::List(ferry_wire::List::I32(vec![1, 2]))).unwrap();
    let bytes = m.to_vec().unwrap();
    let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
    assert!(view.messages(16).is_empty(), "bytes field read as a message list");
    assert!(view.bytes_list(16).is_empty());
    assert!(view.scalars::<u32>(16).is_empty());
    assert!(
        view.messages(999).is_empty(),
        "unknown field read as a message list"
    );
    // A repeated field is not a singular message, and the width must match.
    assert!(view.message(21).is_none());
    assert!(view.scalars::<u64>(21).is_empty());
    assert_eq!(view.scalars::<i32>(21).iter().collect::<Vec<_>>(), [1, 2]);
}

/// `max_depth` was not capped, so a deep enough chain with a huge limit overflowed the stack.
#[test]
fn max_depth_is_clamped() {
    let mut m = DynamicMessage::new(&ALL_KINDS);
    for _ in 0..(Limits::MAX_DEPTH + 10) {
        let mut parent = DynamicMessage::new(&ALL_KINDS);
        parent.set(17, Value::Message(m)).unwrap();
        m = parent;
    }
    let bytes = m.to_vec().unwrap();
    let huge = Limits {
        max_depth: u32::MAX,
        ..Limits::default()
    };
    let err = View::decode(&bytes, &ALL_KINDS, &huge).unwrap_err();
    assert_eq!(
        err.kind(),
        &DecodeErrorKind::TooDeep {
            max: Limits::MAX_DEPTH
        }
    );
    // Dropping a deep DynamicMessage recurses too; it is fine at this depth.
}

struct Visits(&'static [u32]);

impl<'a> Encode<'a> for Visits {
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        for &f in self.0 {
            v.scalar(f, u64::from(f));
        }
    }
}

/// Fields visited out of order within a chunk used to be written swapped, silently.
#[test]
fn out_of_order_visits_are_an_encode_error() {
    assert_eq!(
        Visits(&[2, 1]).to_vec(),
        Err(EncodeError::FieldOrder { field: 1 })
    );
    assert_eq!(
        Visits(&[3, 3]).to_vec(),
        Err(EncodeError::FieldOrder { field: 3 })
    );
    assert_eq!(Visits(&[0]).to_vec(), Err(EncodeError::FieldOrder { field: 0 }));
    assert_eq!(
        Visits(&[1 << 29]).to_vec(),
        Err(EncodeError::FieldOrder { field: 1 << 29 })
    );
    assert!(Visits(&[1, 2, 64, 70000]).to_vec().is_ok());
}

/// An iterator whose `len()` understated its items used to overwrite element headers.
struct Lying;

impl<'a> Encode<'a> for Lying {
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        struct Short(std::vec::IntoIter<Visits>);
        impl Iterator for Short {
            type Item = Visits;
            fn next(&mut self) -> Option<Visits> {
                self.0.next()
            }
        }
        impl ExactSizeIterator for Short {
            fn len(&self) -> usize {
                1
            }
        }
        v.messages(
            1,
            Short(vec![Visits(&[1]), Visits(&[2]), Visits(&[3])].into_iter()),
        );
    }
}

#[test]
fn a_lying_exact_size_iterator_is_an_encode_error() {
    assert!(Lying.to_vec().is_err());
}

/// A shared buffer of another pool used to become a gather entry in memory the transport
/// never registered.
#[test]
fn foreign_pool_buffers_are_copied() {
    let ours = pool();
    let theirs = pool();
    let ctx = Context::new(ours.clone()).with_threshold(0);
    let foreign = theirs.copy_from(&[1u8; 1024]).unwrap();
    assert!(!HybridBytes::from_shared(foreign.clone(), &ctx).is_zero_copy());
    assert!(!HybridBytes::new(&foreign, &ctx).is_zero_copy());
    // Echoing a message received into the other pool copies its fields.
    let mut rec = Record::new(&ctx);
    rec.append_field(&foreign[..]);
    let received = theirs.copy_from(&rec.to_vec().unwrap()).unwrap();
    let view = Record::decode_shared(&received).unwrap();
    assert!(!view.to_message(&ctx).unwrap().fields()[0].is_zero_copy());
    let mine = ours.copy_from(&rec.to_vec().unwrap()).unwrap();
    let view = Record::decode_shared(&mine).unwrap();
    assert!(view.to_message(&ctx).unwrap().fields()[0].is_zero_copy());
}

/// Under edition 2024 the list iterators captured `&self`, so an iterator could not outlive the
/// temporary list value it came from (`view.fields().iter()` did not compile when kept).
#[test]
fn list_iterators_outlive_the_list_value() {
    let ctx = Context::copy_only();
    let mut rec = Record::new(ctx);
    rec.append_field(&b"a"[..]);
    rec.append_field(&b"bc"[..]);
    let bytes = rec.to_vec().unwrap();
    let view = Record::decode(&bytes).unwrap();
    let fields = view.fields().iter();
    let present = view.view().present_fields();
    assert_eq!(fields.map(<[u8]>::len).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(present.collect::<Vec<_>>(), [2]);
}

/// Map entries with duplicate or unordered keys from a peer were accepted, so a decoded map
/// could hold two values for one key (and `ferry decode` printed duplicate JSON keys).
#[test]
fn map_keys_must_be_strictly_ascending() {
    use ferry_wire::List;
    use ferry_wire::sample::MAP_STRING_INT64;
    let ctx = Context::copy_only();
    let entry = |k: &'static str, v: i64| {
        let mut e = DynamicMessage::new(&MAP_STRING_INT64);
        e.set(1, Value::Bytes(HybridBytes::new(k.as_bytes(), ctx)))
            .unwrap();
        e.set(2, Value::I64(v)).unwrap();
        e
    };
    let decode = |entries: Vec<DynamicMessage<'static>>| {
        let mut m = DynamicMessage::new(&ALL_KINDS);
        m.set(40, Value::List(List::Messages(entries))).unwrap();
        let bytes = m.to_vec().unwrap();
        View::decode(&bytes, &ALL_KINDS, &Limits::default())
            .map(|_| ())
            .map_err(|e| e.kind().clone())
    };
    assert_eq!(decode(vec![entry("a", 1), entry("b", 2)]), Ok(()));
    assert_eq!(
        decode(vec![entry("b", 1), entry("a", 2)]),
        Err(DecodeErrorKind::MapKeyOrder { index: 1 })
    );
    assert_eq!(
        decode(vec![entry("a", 1), entry("a", 2)]),
        Err(DecodeErrorKind::MapKeyOrder { index: 1 })
    );
}

/// A message missing a proto2 `required` field encoded fine and was then rejected by every
/// decoder; encoding now fails (generated types and `DynamicMessage` alike).
#[test]
fn missing_required_fields_fail_to_encode() {
    use ferry_wire::{FieldDesc, Kind, Label, MessageDesc};
    static REQ: MessageDesc = MessageDesc::new(
        "t.Req",
        &[FieldDesc {
            name: "id",
            number: 1,
            kind: Kind::UInt64,
            label: Label::Required,
            oneof: None,
        }],
        false,
    );
    let mut m = DynamicMessage::new(&REQ);
    assert_eq!(
        m.to_vec(),
        Err(EncodeError::MissingRequired {
            field: "id".to_owned()
        })
    );
    m.set(1, Value::U64(0)).unwrap();
    let bytes = m.to_vec().unwrap();
    assert!(View::decode(&bytes, &REQ, &Limits::default()).is_ok());
}

/// Encodes `m` and overwrites the first `BAD!` in the bytes with `B`, 0xff, `D`, `!` (invalid
/// UTF-8 from byte 1): validation does not check UTF-8 (section 8.2), reading does.
fn with_bad_utf8(m: &DynamicMessage<'_>) -> Vec<u8> {
    let mut bytes = m.to_vec().unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == b"BAD!")
        .expect("the marker is in the encoding");
    bytes[at + 1] = 0xff;
    bytes
}

/// A read-time error (invalid UTF-8 found by `DynamicMessage::from_view`, after validation)
/// named only the innermost field, `AllKinds.string`, not the path from the root that
/// validation errors give (`AllKinds.child > AllKinds.child > AllKinds.string`).
#[test]
fn read_time_errors_name_the_whole_path() {
    use ferry_wire::List;
    let ctx = Context::copy_only();
    let text = |s: &'static str| Value::Bytes(HybridBytes::new(s.as_bytes(), ctx));
    let nest = |m: DynamicMessage<'static>| {
        let mut parent = DynamicMessage::new(&ALL_KINDS);
        parent.set(17, Value::Message(m)).unwrap();
        parent
    };

    // A singular string two levels down.
    let mut leaf = DynamicMessage::new(&ALL_KINDS);
    leaf.set(15, text("BAD!")).unwrap();
    let bytes = with_bad_utf8(&nest(nest(leaf)));
    let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
    let err = DynamicMessage::from_view(&view, ctx).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::InvalidUtf8 { valid_up_to: 1 });
    assert_eq!(
        err.path().collect::<Vec<_>>(),
        [
            "ferry.sample.AllKinds.child",
            "ferry.sample.AllKinds.child",
            "ferry.sample.AllKinds.string"
        ]
    );
    assert_eq!(
        err.to_string(),
        format!(
            "decode error in field `ferry.sample.AllKinds.child > ferry.sample.AllKinds.child > \
             ferry.sample.AllKinds.string` at byte {}: string is not UTF-8 (valid up to byte 1)",
            err.offset()
        )
    );

    // An element of a repeated string in the second element of a repeated message.
    let mut leaf = DynamicMessage::new(&ALL_KINDS);
    leaf.set(
        35,
        Value::List(List::Bytes(vec![
            HybridBytes::new(b"ok", ctx),
            HybridBytes::new(b"BAD!", ctx),
        ])),
    )
    .unwrap();
    let mut root = DynamicMessage::new(&ALL_KINDS);
    root.set(
        37,
        Value::List(List::Messages(vec![DynamicMessage::new(&ALL_KINDS), leaf])),
    )
    .unwrap();
    let bytes = with_bad_utf8(&root);
    let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
    let err = DynamicMessage::from_view(&view, ctx).unwrap_err();
    let at = bytes.windows(2).position(|w| w == [b'B', 0xff]).unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "decode error in field `ferry.sample.AllKinds.r_child > ferry.sample.AllKinds.r_string` \
             at byte {at}: string is not UTF-8 (valid up to byte 1)"
        )
    );
}

/// A map key with invalid UTF-8 was reported as `AllKinds.StrI64Entry.key`, without the map
/// field that holds the entry; it now reads `AllKinds.m_str_i64 > AllKinds.StrI64Entry.key`,
/// as a validation error inside the entry would.
#[test]
fn read_time_errors_in_map_keys_name_the_map_field() {
    use ferry_wire::sample::MAP_STRING_INT64;
    let ctx = Context::copy_only();
    let mut entry = DynamicMessage::new(&MAP_STRING_INT64);
    entry
        .set(1, Value::Bytes(HybridBytes::new(b"BAD!", ctx)))
        .unwrap();
    let mut m = DynamicMessage::new(&ALL_KINDS);
    m.set(40, Value::List(ferry_wire::List::Messages(vec![entry])))
        .unwrap();
    let bytes = with_bad_utf8(&m);
    let view = View::decode(&bytes, &ALL_KINDS, &Limits::default()).unwrap();
    let err = DynamicMessage::from_view(&view, ctx).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "decode error in field `ferry.sample.AllKinds.m_str_i64 > \
             ferry.sample.AllKinds.StrI64Entry.key` at byte {}: string is not UTF-8 (valid up to \
             byte 1)",
            err.offset()
        )
    );
}
