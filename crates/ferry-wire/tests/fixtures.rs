//! Byte-level fixtures of `docs/wire-format.md`: every example of the document, encoded and
//! decoded, plus inputs the validator must reject (error kind and offset) and inputs it must
//! accept although the encoder never writes them.
//!
//! Each fixture is the hex dump printed in the document, verbatim: an offset column, eight
//! bytes, and a `//` comment. [`hex`] checks the offset column while parsing, and
//! [`dumps_appear_verbatim_in_the_document`] checks that the document still shows these bytes.

mod common;
use common::pool;
use std::io::IoSlice;

use ferry_buf::{Pool, SharedBuf};
use ferry_wire::{
    Context, DecodeError, DecodeErrorKind, DynamicMessage, Encode, FieldDesc, HybridBytes, Kind, Label,
    Limits, List, MessageDesc, Outgoing, Value, View, Visitor, iovecs,
};

use DecodeErrorKind as K;

// ---------------------------------------------------------------------------------------------
// Schemas of the examples (the `.proto` text is in the document).
// ---------------------------------------------------------------------------------------------

const fn opt(name: &'static str, number: u32, kind: Kind<'static>) -> FieldDesc<'static> {
    FieldDesc::new(name, number, kind, Label::Optional)
}

/// Example 1.
static SCALARS: MessageDesc = MessageDesc::new(
    "fixtures.Scalars",
    &[
        opt("temp", 1, Kind::Int32),
        opt("id", 2, Kind::UInt32),
        opt("ok", 3, Kind::Bool),
        opt("big", 4, Kind::Int64),
        opt("ratio", 5, Kind::Float),
    ],
    false,
);

/// Example 1 after a schema change: `temp` widened to `int64`, `id` to `uint64`, `ratio` removed.
static SCALARS_V2: MessageDesc = MessageDesc::new(
    "fixtures.ScalarsV2",
    &[
        opt("temp", 1, Kind::Int64),
        opt("id", 2, Kind::UInt64),
        opt("ok", 3, Kind::Bool),
    ],
    false,
);

/// Example 1 with `big` made proto2 `required`.
static SCALARS_REQUIRED: MessageDesc = MessageDesc::new(
    "fixtures.ScalarsRequired",
    &[
        opt("temp", 1, Kind::Int32),
        FieldDesc::new("big", 4, Kind::Int64, Label::Required),
    ],
    false,
);

/// Examples 2 and 3.
static ITEM: MessageDesc = MessageDesc::new(
    "fixtures.Item",
    &[opt("key", 1, Kind::Bytes), opt("name", 2, Kind::String)],
    false,
);

/// Example 4, nested.
static INNER: MessageDesc = MessageDesc::new(
    "fixtures.Inner",
    &[opt("x", 1, Kind::Int32), opt("tag", 2, Kind::String)],
    false,
);

/// Example 4.
static OUTER: MessageDesc = MessageDesc::new(
    "fixtures.Outer",
    &[
        opt("inner", 1, Kind::Message(&INNER)),
        FieldDesc::new("nums", 2, Kind::Int32, Label::Repeated),
        opt("far", 70, Kind::Fixed64),
    ],
    false,
);

/// Example 4 as an older reader knows it: only field 70.
static OUTER_V0: MessageDesc = MessageDesc::new("fixtures.OuterV0", &[opt("far", 70, Kind::Fixed64)], false);

/// Example 5, the map entry of `map<string, int64> counts = 1`.
static COUNTS_ENTRY: MessageDesc = MessageDesc::new(
    "fixtures.Tagged.CountsEntry",
    &[opt("key", 1, Kind::String), opt("value", 2, Kind::Int64)],
    true,
);

/// Example 5.
static TAGGED: MessageDesc = MessageDesc::new(
    "fixtures.Tagged",
    &[
        FieldDesc::new("counts", 1, Kind::Message(&COUNTS_ENTRY), Label::Repeated),
        FieldDesc {
            name: "id",
            number: 2,
            kind: Kind::UInt64,
            label: Label::Optional,
            oneof: Some(0),
        },
        FieldDesc {
            name: "label",
            number: 3,
            kind: Kind::String,
            label: Label::Optional,
            oneof: Some(0),
        },
    ],
    false,
);

/// [`TAGGED`] without the oneof: lets a test write two members of it.
static TAGGED_NO_ONEOF: MessageDesc = MessageDesc::new(
    "fixtures.TaggedNoOneof",
    &[
        FieldDesc::new("counts", 1, Kind::Message(&COUNTS_ENTRY), Label::Repeated),
        opt("id", 2, Kind::UInt64),
        opt("label", 3, Kind::String),
    ],
    false,
);

/// Example 6 (the Cornflakes paper's Figure 4 message).
static RECORD: MessageDesc = MessageDesc::new(
    "fixtures.Record",
    &[
        opt("key", 1, Kind::Bytes),
        FieldDesc::new("fields", 2, Kind::Bytes, Label::Repeated),
    ],
    false,
);

/// A recursive message: `message Node { repeated Node kids = 1; }`.
static NODE: MessageDesc = MessageDesc::new(
    "fixtures.Node",
    &[FieldDesc::new("kids", 1, Kind::Message(&NODE), Label::Repeated)],
    false,
);

// ---------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------

/// Parses a dump: per line an offset, up to eight hex bytes and an optional `// comment`;
/// lines with only a comment are skipped. Panics if an offset does not match the bytes before it.
fn hex(dump: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in dump.lines() {
        let data = line.split("//").next().unwrap_or_default().trim();
        let mut tokens = data.split_whitespace();
        let Some(offset) = tokens.next() else { continue };
        let offset = usize::from_str_radix(offset, 16).expect("offset column");
        assert_eq!(offset, out.len(), "offset column of line `{line}`");
        for t in tokens {
            out.push(u8::from_str_radix(t, 16).expect("hex byte"));
        }
    }
    out
}

/// `bytes` with `new` written at `at`.
fn patch(bytes: &[u8], at: usize, new: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + new.len()].copy_from_slice(new);
    b
}

fn copied(data: &'static [u8]) -> Value<'static> {
    Value::Bytes(HybridBytes::new(data, Context::copy_only()))
}

fn decode<'b>(bytes: &'b [u8], desc: &'static MessageDesc) -> View<'b> {
    View::decode(bytes, desc, &Limits::default()).expect("fixture decodes")
}

fn reject(bytes: &[u8], desc: &'static MessageDesc, limits: &Limits) -> DecodeError {
    View::decode(bytes, desc, limits).expect_err("input must be rejected")
}

fn assert_error(err: &DecodeError, kind: DecodeErrorKind, offset: u64, path: &[&str]) {
    assert_eq!(err.kind(), &kind, "{err}");
    assert_eq!(err.offset(), offset, "{err}");
    assert_eq!(err.path().collect::<Vec<_>>(), path, "{err}");
}

/// Encodes `m` and checks it against `dump`; also checks the layout's arithmetic.
fn assert_encodes_to<'a, M: Encode<'a>>(m: &M, dump: &str) -> Vec<u8> {
    let expected = hex(dump);
    let bytes = m.to_vec().expect("encodes");
    assert_eq!(
        bytes, expected,
        "\nencoded: {bytes:02x?}\nexpected: {expected:02x?}"
    );
    assert_eq!(m.layout().total_len(), bytes.len());
    bytes
}

/// The zero-copy examples' pool.
/// A value in `pool`, sent by reference.
fn zero_copy(pool: &Pool, data: &[u8]) -> (SharedBuf, HybridBytes<'static>) {
    let buf = pool.copy_from(data).expect("pool buffer");
    let ctx = Context::new(pool.clone()).with_threshold(0);
    let value = HybridBytes::from_shared(buf.clone(), &ctx);
    assert!(value.is_zero_copy());
    (buf, value)
}

// ---------------------------------------------------------------------------------------------
// The document's dumps. Keep them byte-for-byte identical to `docs/wire-format.md`.
// ---------------------------------------------------------------------------------------------

const EX1_SCALARS: &str = "
0000  01 00 00 00 04 00 00 00  // preamble: 1 chunk, flags 0, 4 entries
0008  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0010  2e 00 00 00 00 00 00 00  // chunk 0: bits 0x2e = fields 1, 2, 3, 5
0018  fe ff ff ff ff ff ff ff  // entry 0, field 1 temp (int32) = -2, sign-extended
0020  ef be ad de 00 00 00 00  // entry 1, field 2 id (uint32) = 0xdeadbeef, zero-extended
0028  01 00 00 00 00 00 00 00  // entry 2, field 3 ok (bool) = true
0030  00 00 c0 3f 00 00 00 00  // entry 3, field 5 ratio (float) = 1.5 (bits 0x3fc00000)
";

const EX2_ITEM: &str = "
0000  01 00 00 00 02 00 00 00  // preamble: 1 chunk, flags 0, 2 entries
0008  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0010  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1, 2
0018  28 00 00 00 03 00 00 00  // entry 0, field 1 key: offset 0x28, length 3
0020  30 00 00 00 05 00 00 00  // entry 1, field 2 name: offset 0x30, length 5
0028  01 02 03 00 00 00 00 00  // key bytes 01 02 03, 5 bytes of padding
0030  66 65 72 72 79 00 00 00  // name \"ferry\", 3 bytes of padding
";

const EX3_ITEM_ZERO_COPY: &str = "
0000  01 00 00 00 02 00 00 00  // preamble: 1 chunk, flags 0, 2 entries
0008  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0010  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1, 2
0018  30 00 00 00 10 00 00 00  // entry 0, field 1 key: offset 0x30, length 16 (zero-copy)
0020  28 00 00 00 05 00 00 00  // entry 1, field 2 name: offset 0x28, length 5
0028  66 65 72 72 79 00 00 00  // name \"ferry\", 3 bytes of padding
//                                 end of gather entry 0 (header segment, 0x30 bytes)
0030  7a 65 72 6f 2d 63 6f 70  // gather entry 1: key \"zero-cop\"
0038  79 20 76 61 6c 75 65 21  //                     \"y value!\"
";

const EX4_OUTER: &str = "
0000  02 00 00 00 03 00 00 00  // preamble: 2 chunks, flags 0, 3 entries
0008  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0010  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1, 2
0018  01 00 00 00 02 00 00 00  // chunk 1: group 1, rank base 2
0020  40 00 00 00 00 00 00 00  // chunk 1: bits 0x40 = bit 6 = field 64 + 6 = 70
0028  40 00 00 00 28 00 00 00  // entry 0, field 1 inner: header at 0x40, length 0x28
0030  70 00 00 00 0c 00 00 00  // entry 1, field 2 nums: offset 0x70, length 12 (3 x 4)
0038  08 07 06 05 04 03 02 01  // entry 2, field 70 far (fixed64) = 0x0102030405060708
0040  01 00 00 00 02 00 00 00  // inner header: 1 chunk, flags 0, 2 entries
0048  00 00 00 00 00 00 00 00  // inner chunk 0: group 0, rank base 0
0050  06 00 00 00 00 00 00 00  // inner chunk 0: bits 0x06 = fields 1, 2
0058  07 00 00 00 00 00 00 00  // inner entry 0, field 1 x (int32) = 7
0060  68 00 00 00 02 00 00 00  // inner entry 1, field 2 tag: offset 0x68, length 2
0068  68 69 00 00 00 00 00 00  // tag \"hi\", 6 bytes of padding
0070  01 00 00 00 ff ff ff ff  // nums[0] = 1, nums[1] = -1
0078  03 00 00 00 00 00 00 00  // nums[2] = 3, 4 bytes of padding
";

const EX5_TAGGED: &str = "
0000  01 00 00 00 02 00 00 00  // preamble: 1 chunk, flags 0, 2 entries
0008  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0010  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1, 2
0018  28 00 00 00 10 00 00 00  // entry 0, field 1 counts: pointer array at 0x28, 16 bytes = 2 entries
0020  09 00 00 00 00 00 00 00  // entry 1, field 2 id (uint64, oneof choice) = 9
0028  38 00 00 00 28 00 00 00  // counts[0]: entry header at 0x38, length 0x28
0030  68 00 00 00 28 00 00 00  // counts[1]: entry header at 0x68, length 0x28
0038  01 00 00 00 02 00 00 00  // counts[0] header: 1 chunk, flags 0, 2 entries
0040  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0048  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1 (key), 2 (value)
0050  60 00 00 00 01 00 00 00  // key: offset 0x60, length 1
0058  01 00 00 00 00 00 00 00  // value (int64) = 1
0060  61 00 00 00 00 00 00 00  // key \"a\", 7 bytes of padding
0068  01 00 00 00 02 00 00 00  // counts[1] header: 1 chunk, flags 0, 2 entries
0070  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0078  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1 (key), 2 (value)
0080  90 00 00 00 01 00 00 00  // key: offset 0x90, length 1
0088  fe ff ff ff ff ff ff ff  // value (int64) = -2
0090  62 00 00 00 00 00 00 00  // key \"b\", 7 bytes of padding
";

const EX6_RECORD: &str = "
0000  01 00 00 00 02 00 00 00  // preamble: 1 chunk, flags 0, 2 entries
0008  00 00 00 00 00 00 00 00  // chunk 0: group 0, rank base 0
0010  06 00 00 00 00 00 00 00  // chunk 0: bits 0x06 = fields 1, 2
0018  28 00 00 00 03 00 00 00  // entry 0, field 1 key: offset 0x28, length 3
0020  30 00 00 00 18 00 00 00  // entry 1, field 2 fields: pointer array at 0x30, 24 bytes = 3 entries
0028  6b 65 79 00 00 00 00 00  // key \"key\", 5 bytes of padding
0030  58 00 00 00 10 00 00 00  // fields[0]: offset 0x58, length 16 (zero-copy)
0038  48 00 00 00 03 00 00 00  // fields[1]: offset 0x48, length 3
0040  50 00 00 00 05 00 00 00  // fields[2]: offset 0x50, length 5
0048  74 77 6f 00 00 00 00 00  // fields[1] \"two\", 5 bytes of padding
0050  74 68 72 65 65 00 00 00  // fields[2] \"three\", 3 bytes of padding
//                                 end of gather entry 0 (header segment, 0x58 bytes)
0058  76 61 6c 75 65 20 6f 6e  // gather entry 1: fields[0] \"value on\"
0060  65 2c 20 6c 61 72 67 65  //                           \"e, large\"
";

const EX0_EMPTY: &str = "
0000  00 00 00 00 00 00 00 00  // preamble: 0 chunks, flags 0, 0 entries
";

#[test]
fn dumps_appear_verbatim_in_the_document() {
    let doc = include_str!("../../../docs/wire-format.md");
    for dump in [
        EX0_EMPTY,
        EX1_SCALARS,
        EX2_ITEM,
        EX3_ITEM_ZERO_COPY,
        EX4_OUTER,
        EX5_TAGGED,
        EX6_RECORD,
    ] {
        let dump = dump.trim();
        assert!(doc.contains(dump), "docs/wire-format.md lacks the dump\n{dump}");
    }
}

// ---------------------------------------------------------------------------------------------
// Example 0: the empty message.
// ---------------------------------------------------------------------------------------------

#[test]
fn ex0_empty_message() {
    let bytes = assert_encodes_to(&DynamicMessage::new(&SCALARS), EX0_EMPTY);
    let view = decode(&bytes, &SCALARS);
    assert_eq!(view.present_fields().count(), 0);
    assert_eq!(view.scalar::<i32>(1), None);
}

// ---------------------------------------------------------------------------------------------
// Example 1: scalars only.
// ---------------------------------------------------------------------------------------------

fn ex1_message() -> DynamicMessage<'static> {
    let mut m = DynamicMessage::new(&SCALARS);
    m.set(1, Value::I32(-2)).unwrap();
    m.set(2, Value::U32(0xdead_beef)).unwrap();
    m.set(3, Value::Bool(true)).unwrap();
    m.set(5, Value::F32(1.5)).unwrap();
    m
}

#[test]
fn ex1_scalars_encode() {
    assert_encodes_to(&ex1_message(), EX1_SCALARS);
}

#[test]
fn ex1_scalars_decode() {
    let bytes = hex(EX1_SCALARS);
    let view = decode(&bytes, &SCALARS);
    assert_eq!(view.present_fields().collect::<Vec<_>>(), [1, 2, 3, 5]);
    assert_eq!(view.scalar::<i32>(1), Some(-2));
    assert_eq!(view.scalar::<u32>(2), Some(0xdead_beef));
    assert_eq!(view.scalar::<bool>(3), Some(true));
    assert_eq!(view.scalar::<i64>(4), None);
    assert_eq!(view.scalar::<f32>(5), Some(1.5));
    assert_eq!(view.entry(1), Some(u64::MAX - 1));
    assert_eq!(
        DynamicMessage::from_view(&view, Context::copy_only()).unwrap(),
        ex1_message()
    );
}

#[test]
fn ex1_read_with_a_widened_schema() {
    // int32 -> int64 and uint32 -> uint64 keep the value; removed fields are skipped.
    let bytes = hex(EX1_SCALARS);
    let view = decode(&bytes, &SCALARS_V2);
    assert_eq!(view.scalar::<i64>(1), Some(-2));
    assert_eq!(view.scalar::<u64>(2), Some(0xdead_beef));
    assert_eq!(view.scalar::<bool>(3), Some(true));
    let back = DynamicMessage::from_view(&view, Context::copy_only()).unwrap();
    assert_eq!(back.iter().map(|(n, _)| n).collect::<Vec<_>>(), [1, 2, 3]);
}

#[test]
fn int64_read_as_int32_keeps_the_low_half() {
    let bytes = patch(&hex(EX1_SCALARS), 0x18, &0x0000_0001_0000_0005u64.to_le_bytes());
    let view = decode(&bytes, &SCALARS);
    assert_eq!(view.scalar::<i32>(1), Some(5));
    assert_eq!(decode(&bytes, &SCALARS_V2).scalar::<i64>(1), Some(0x1_0000_0005));
}

// ---------------------------------------------------------------------------------------------
// Example 2: copied bytes and string.
// ---------------------------------------------------------------------------------------------

fn ex2_message() -> DynamicMessage<'static> {
    let mut m = DynamicMessage::new(&ITEM);
    m.set(1, copied(&[1, 2, 3])).unwrap();
    m.set(2, copied(b"ferry")).unwrap();
    m
}

#[test]
fn ex2_item_encode() {
    let bytes = assert_encodes_to(&ex2_message(), EX2_ITEM);
    let layout = ex2_message().layout();
    assert_eq!(
        (layout.head_len, layout.zero_copy_len, layout.zero_copy_count),
        (bytes.len(), 0, 0)
    );
}

#[test]
fn ex2_item_decode() {
    let bytes = hex(EX2_ITEM);
    let view = decode(&bytes, &ITEM);
    assert_eq!(view.bytes(1), Some(&[1u8, 2, 3][..]));
    assert_eq!(view.str(2).unwrap(), Some("ferry"));
    assert_eq!(
        DynamicMessage::from_view(&view, Context::copy_only()).unwrap(),
        ex2_message()
    );
}

#[test]
fn empty_copied_bytes_have_offset_zero() {
    let mut m = DynamicMessage::new(&ITEM);
    m.set(1, copied(b"")).unwrap();
    let bytes = m.to_vec().unwrap();
    assert_eq!(bytes.len(), 32);
    assert_eq!(bytes[0x18..0x20], [0; 8]);
    assert_eq!(decode(&bytes, &ITEM).bytes(1), Some(&[][..]));
}

// ---------------------------------------------------------------------------------------------
// Example 3: example 2 with a zero-copy key.
// ---------------------------------------------------------------------------------------------

const EX3_KEY: &[u8; 16] = b"zero-copy value!";

#[test]
fn ex3_item_zero_copy_encode() {
    let pool = pool();
    let (key_buf, key) = zero_copy(&pool, EX3_KEY);
    let mut m = DynamicMessage::new(&ITEM);
    m.set(1, Value::Bytes(key)).unwrap();
    m.set(2, copied(b"ferry")).unwrap();

    let expected = hex(EX3_ITEM_ZERO_COPY);
    let layout = m.layout();
    assert_eq!(
        (layout.head_len, layout.zero_copy_len, layout.zero_copy_count),
        (0x30, 16, 1)
    );

    // Gather entry 0: the header segment.
    let mut head = vec![0xaa; layout.head_len];
    m.write_head(&layout, &mut head).unwrap();
    assert_eq!(head, expected[..0x30]);

    // Gather entry 1: the pool buffer itself, not a copy.
    let mut bufs = Vec::new();
    m.zero_copy_bufs(&mut bufs).unwrap();
    assert_eq!(bufs.len(), 1);
    assert_eq!(bufs[0].as_ptr(), key_buf.as_ptr());
    assert_eq!(&bufs[0][..], &expected[0x30..]);

    let mut gather: Vec<IoSlice<'_>> = Vec::new();
    iovecs(&head, &bufs, &mut gather);
    assert_eq!(gather.iter().map(|s| s.len()).collect::<Vec<_>>(), [0x30, 16]);

    assert_encodes_to(&m, EX3_ITEM_ZERO_COPY);
}

#[test]
fn ex3_item_zero_copy_decode() {
    let bytes = hex(EX3_ITEM_ZERO_COPY);
    let view = decode(&bytes, &ITEM);
    assert_eq!(view.bytes(1), Some(&EX3_KEY[..]));
    assert_eq!(view.str(2).unwrap(), Some("ferry"));

    // Received into pool memory, the key can be taken (and re-sent) without a copy.
    let pool = pool();
    let received = pool.copy_from(&bytes).unwrap();
    let view = View::decode_shared(&received, &ITEM, &Limits::default()).unwrap();
    let key = view.shared(1).expect("sub-buffer");
    assert_eq!(&key[..], EX3_KEY);
    assert_eq!(key.as_ptr(), received[0x30..].as_ptr());
}

// ---------------------------------------------------------------------------------------------
// Example 4: nested message, repeated int32, a field past 64.
// ---------------------------------------------------------------------------------------------

fn ex4_message() -> DynamicMessage<'static> {
    let mut inner = DynamicMessage::new(&INNER);
    inner.set(1, Value::I32(7)).unwrap();
    inner.set(2, copied(b"hi")).unwrap();
    let mut m = DynamicMessage::new(&OUTER);
    m.set(1, Value::Message(inner)).unwrap();
    m.set(2, Value::List(List::I32(vec![1, -1, 3]))).unwrap();
    m.set(70, Value::U64(0x0102_0304_0506_0708)).unwrap();
    m
}

#[test]
fn ex4_outer_encode() {
    assert_encodes_to(&ex4_message(), EX4_OUTER);
}

#[test]
fn ex4_outer_decode() {
    let bytes = hex(EX4_OUTER);
    let view = decode(&bytes, &OUTER);
    assert_eq!(view.present_fields().collect::<Vec<_>>(), [1, 2, 70]);
    let inner = view.message(1).expect("inner");
    assert_eq!(inner.scalar::<i32>(1), Some(7));
    assert_eq!(inner.str(2).unwrap(), Some("hi"));
    assert_eq!(view.scalars::<i32>(2).iter().collect::<Vec<_>>(), [1, -1, 3]);
    assert_eq!(view.scalar::<u64>(70), Some(0x0102_0304_0506_0708));
    assert_eq!(
        DynamicMessage::from_view(&view, Context::copy_only()).unwrap(),
        ex4_message()
    );
}

#[test]
fn ex4_unknown_fields_are_skipped() {
    let bytes = hex(EX4_OUTER);
    let view = decode(&bytes, &OUTER_V0);
    assert_eq!(view.scalar::<u64>(70), Some(0x0102_0304_0506_0708));
    // Still present, as raw entries.
    assert_eq!(view.present_fields().collect::<Vec<_>>(), [1, 2, 70]);
    assert_eq!(view.entry(2), Some(0x0000_000c_0000_0070));
    // Their contents are not validated: a broken list in an unknown field is accepted.
    let broken = patch(&bytes, 0x30, &[0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0]);
    assert!(View::decode(&broken, &OUTER_V0, &Limits::default()).is_ok());
    assert!(View::decode(&broken, &OUTER, &Limits::default()).is_err());
}

// ---------------------------------------------------------------------------------------------
// Example 5: a map and a oneof.
// ---------------------------------------------------------------------------------------------

fn ex5_message() -> DynamicMessage<'static> {
    let mut m = DynamicMessage::new(&TAGGED);
    // Inserted out of order: the map is written in ascending key order.
    m.insert_map_entry(1, copied(b"b"), Value::I64(-2)).unwrap();
    m.insert_map_entry(1, copied(b"a"), Value::I64(1)).unwrap();
    m.set(3, copied(b"dropped")).unwrap();
    m.set(2, Value::U64(9)).unwrap(); // clears field 3, the other member of the oneof
    m
}

#[test]
fn ex5_tagged_encode() {
    assert_encodes_to(&ex5_message(), EX5_TAGGED);
}

#[test]
fn ex5_tagged_decode() {
    let bytes = hex(EX5_TAGGED);
    let view = decode(&bytes, &TAGGED);
    let counts: Vec<(&str, i64)> = view
        .messages(1)
        .iter()
        .map(|e| (e.str(1).unwrap().unwrap(), e.scalar::<i64>(2).unwrap()))
        .collect();
    assert_eq!(counts, [("a", 1), ("b", -2)]);
    assert_eq!(view.scalar::<u64>(2), Some(9));
    assert!(!view.has(3));
    assert_eq!(
        DynamicMessage::from_view(&view, Context::copy_only()).unwrap(),
        ex5_message()
    );
}

// ---------------------------------------------------------------------------------------------
// Example 6: repeated bytes with one zero-copy element (the paper's Figure 4).
// ---------------------------------------------------------------------------------------------

const EX6_VAL1: &[u8; 16] = b"value one, large";

#[test]
fn ex6_record_encode() {
    let pool = pool();
    let (val1_buf, val1) = zero_copy(&pool, EX6_VAL1);
    let ctx = Context::copy_only();
    let mut m = DynamicMessage::new(&RECORD);
    m.set(1, copied(b"key")).unwrap();
    let list = vec![
        val1,
        HybridBytes::new(b"two", ctx),
        HybridBytes::new(b"three", ctx),
    ];
    m.set(2, Value::List(List::Bytes(list))).unwrap();

    let layout = m.layout();
    assert_eq!(
        (layout.head_len, layout.zero_copy_len, layout.zero_copy_count),
        (0x58, 16, 1)
    );
    let mut bufs = Vec::new();
    m.zero_copy_bufs(&mut bufs).unwrap();
    assert_eq!(bufs.len(), 1);
    assert_eq!(bufs[0].as_ptr(), val1_buf.as_ptr());
    assert_encodes_to(&m, EX6_RECORD);
}

#[test]
fn ex6_record_decode() {
    let bytes = hex(EX6_RECORD);
    let view = decode(&bytes, &RECORD);
    assert_eq!(view.bytes(1), Some(&b"key"[..]));
    let fields = view.bytes_list(2);
    assert_eq!(
        fields.iter().collect::<Vec<_>>(),
        [&EX6_VAL1[..], b"two", b"three"]
    );
}

// ---------------------------------------------------------------------------------------------
// Inputs the validator accepts although the encoder never writes them.
// ---------------------------------------------------------------------------------------------

#[test]
fn readers_are_lenient_where_the_document_says_so() {
    let ex1 = hex(EX1_SCALARS);
    // bool: any nonzero entry is true.
    let b = patch(&ex1, 0x28, &2u64.to_le_bytes());
    assert_eq!(decode(&b, &SCALARS).scalar::<bool>(3), Some(true));
    // int32: the high half is not checked against the sign extension.
    let b = patch(&ex1, 0x18, &0x0000_0000_ffff_fffeu64.to_le_bytes());
    assert_eq!(decode(&b, &SCALARS).scalar::<i32>(1), Some(-2));

    let ex2 = hex(EX2_ITEM);
    // No alignment check: name at 0x31, length 4.
    let b = patch(&ex2, 0x20, &[0x31, 0, 0, 0, 4, 0, 0, 0]);
    assert_eq!(decode(&b, &ITEM).str(2).unwrap(), Some("erry"));
    // Overlapping ranges and ranges into the header: key = the first 8 bytes of the message.
    let b = patch(&ex2, 0x18, &[0, 0, 0, 0, 8, 0, 0, 0]);
    assert_eq!(decode(&b, &ITEM).bytes(1), Some(&ex2[..8]));
    // Trailing bytes after everything referenced.
    let mut b = ex2.clone();
    b.extend_from_slice(&[0xee; 5]);
    assert_eq!(decode(&b, &ITEM).str(2).unwrap(), Some("ferry"));
}

#[test]
fn strings_are_checked_when_read_not_when_validated() {
    let bytes = patch(&hex(EX2_ITEM), 0x31, &[0xff]);
    let view = decode(&bytes, &ITEM);
    let err = view.str(2).unwrap_err();
    assert_error(
        &err,
        DecodeErrorKind::InvalidUtf8 { valid_up_to: 1 },
        0x20,
        &["fixtures.Item.name"],
    );
    assert_eq!(view.bytes(2), Some(&b"f\xffrry"[..]));
}

#[test]
fn most_chunks_the_preamble_can_count() {
    let m = ManyGroups(u16::MAX.into());
    let bytes = m.to_vec().unwrap();
    assert_eq!(bytes[..8], [0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0]);
    let view = decode(&bytes, &SCALARS);
    assert_eq!(view.scalar::<i32>(1), Some(1));
    assert_eq!(view.present_fields().last(), Some(64 * 65534 + 1));
}

// ---------------------------------------------------------------------------------------------
// Inputs the validator must reject: kind, offset and field path.
// ---------------------------------------------------------------------------------------------

#[test]
fn reject_truncated_header() {
    let ex1 = hex(EX1_SCALARS);
    let err = reject(&ex1[..5], &SCALARS, &Limits::default());
    assert_error(
        &err,
        K::HeaderOutOfBounds {
            needed: 8,
            available: 5,
        },
        0,
        &[],
    );
    let err = reject(&ex1[..0x28], &SCALARS, &Limits::default());
    assert_error(
        &err,
        K::HeaderOutOfBounds {
            needed: 0x38,
            available: 0x28,
        },
        0,
        &[],
    );
}

#[test]
fn reject_unknown_flags() {
    let b = patch(&hex(EX1_SCALARS), 2, &[1, 0]);
    assert_error(
        &reject(&b, &SCALARS, &Limits::default()),
        K::UnknownFlags(1),
        0,
        &[],
    );
}

#[test]
fn reject_field_zero_bit() {
    let b = patch(&hex(EX1_SCALARS), 0x10, &[0x2f]);
    assert_error(
        &reject(&b, &SCALARS, &Limits::default()),
        K::BadChunk { chunk: 0 },
        8,
        &[],
    );
}

#[test]
fn reject_empty_chunk_and_group_past_the_last_field() {
    let ex4 = hex(EX4_OUTER);
    let b = patch(&ex4, 0x20, &[0; 8]);
    assert_error(
        &reject(&b, &OUTER, &Limits::default()),
        K::BadChunk { chunk: 1 },
        0x18,
        &[],
    );
    // Group 2^23 would hold fields 2^29 and up.
    let b = patch(&ex4, 0x18, &(1u32 << 23).to_le_bytes());
    assert_error(
        &reject(&b, &OUTER, &Limits::default()),
        K::BadChunk { chunk: 1 },
        0x18,
        &[],
    );
}

#[test]
fn reject_chunks_out_of_order() {
    let b = patch(&hex(EX4_OUTER), 0x18, &[0, 0, 0, 0]);
    assert_error(
        &reject(&b, &OUTER, &Limits::default()),
        K::ChunkOrder { chunk: 1 },
        0x18,
        &[],
    );
}

#[test]
fn reject_rank_mismatch() {
    let b = patch(&hex(EX4_OUTER), 0x1c, &[1, 0, 0, 0]);
    let err = reject(&b, &OUTER, &Limits::default());
    assert_error(
        &err,
        K::RankMismatch {
            chunk: 1,
            found: 1,
            expected: 2,
        },
        0x18,
        &[],
    );
}

#[test]
fn reject_entry_count_mismatch() {
    let b = patch(&hex(EX1_SCALARS), 4, &[3, 0, 0, 0]);
    let err = reject(&b, &SCALARS, &Limits::default());
    assert_error(
        &err,
        K::EntryCount {
            found: 3,
            expected: 4,
        },
        0,
        &[],
    );
}

#[test]
fn reject_out_of_range_offset() {
    let b = patch(&hex(EX2_ITEM), 0x20, &[0x34, 0, 0, 0]);
    let err = reject(&b, &ITEM, &Limits::default());
    let kind = K::RangeOutOfBounds {
        offset: 0x34,
        len: 5,
        message_len: 0x38,
    };
    assert_error(&err, kind, 0x20, &["fixtures.Item.name"]);
}

/// Section 4.1 and 8.1 agree: an empty value's offset is range-checked like any other
/// (`offset + 0 <= message length`) and otherwise unused.
#[test]
fn an_empty_value_may_sit_at_the_end_but_not_past_it() {
    let at_end = patch(&hex(EX2_ITEM), 0x20, &[0x38, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(decode(&at_end, &ITEM).str(2).unwrap(), Some(""));
    for offset in [0x39u32, u32::MAX] {
        let mut entry = offset.to_le_bytes().to_vec();
        entry.extend_from_slice(&[0; 4]);
        let b = patch(&hex(EX2_ITEM), 0x20, &entry);
        let err = reject(&b, &ITEM, &Limits::default());
        let kind = K::RangeOutOfBounds {
            offset,
            len: 0,
            message_len: 0x38,
        };
        assert_error(&err, kind, 0x20, &["fixtures.Item.name"]);
    }
}

#[test]
fn reject_out_of_range_nested_header() {
    let b = patch(&hex(EX4_OUTER), 0x28, &[0x70, 0, 0, 0]);
    let err = reject(&b, &OUTER, &Limits::default());
    let kind = K::RangeOutOfBounds {
        offset: 0x70,
        len: 0x28,
        message_len: 0x80,
    };
    assert_error(&err, kind, 0x28, &["fixtures.Outer.inner"]);
}

#[test]
fn reject_nested_header_length_mismatch() {
    // The entry says 0x30 bytes; the header at 0x40 describes 0x28. Reported at the header.
    let b = patch(&hex(EX4_OUTER), 0x2c, &[0x30, 0, 0, 0]);
    let err = reject(&b, &OUTER, &Limits::default());
    assert_error(
        &err,
        K::HeaderLength {
            declared: 0x30,
            actual: 0x28,
        },
        0x40,
        &["fixtures.Outer.inner"],
    );
}

#[test]
fn reject_error_inside_a_nested_message() {
    let b = patch(&hex(EX4_OUTER), 0x60, &[0x7f, 0, 0, 0]);
    let err = reject(&b, &OUTER, &Limits::default());
    let kind = K::RangeOutOfBounds {
        offset: 0x7f,
        len: 2,
        message_len: 0x80,
    };
    assert_error(&err, kind, 0x60, &["fixtures.Outer.inner", "fixtures.Inner.tag"]);
}

#[test]
fn reject_list_length_not_a_multiple_of_the_width() {
    let b = patch(&hex(EX4_OUTER), 0x34, &[0x0b]);
    let err = reject(&b, &OUTER, &Limits::default());
    assert_error(
        &err,
        K::ListLength { len: 11, width: 4 },
        0x30,
        &["fixtures.Outer.nums"],
    );
}

#[test]
fn reject_out_of_range_list_element() {
    let b = patch(&hex(EX6_RECORD), 0x3c, &[0x40]);
    let err = reject(&b, &RECORD, &Limits::default());
    let kind = K::RangeOutOfBounds {
        offset: 0x48,
        len: 0x40,
        message_len: 0x68,
    };
    assert_error(&err, kind, 0x38, &["fixtures.Record.fields"]);
}

#[test]
fn reject_message_too_large() {
    let limits = Limits {
        max_message_len: 0x7f,
        ..Limits::default()
    };
    let err = reject(&hex(EX4_OUTER), &OUTER, &limits);
    assert_error(&err, K::MessageTooLarge { len: 0x80, max: 0x7f }, 0, &[]);
}

#[test]
fn reject_too_deep() {
    let bytes = hex(EX4_OUTER);
    let limits = Limits {
        max_depth: 1,
        ..Limits::default()
    };
    assert!(View::decode(&bytes, &OUTER, &limits).is_ok());
    let limits = Limits {
        max_depth: 0,
        ..Limits::default()
    };
    let err = reject(&bytes, &OUTER, &limits);
    assert_error(&err, K::TooDeep { max: 0 }, 0x28, &["fixtures.Outer.inner"]);
}

#[test]
fn reject_too_many_elements() {
    // Example 4 counts 3 root entries + 2 inner entries + 3 list elements = 8.
    let bytes = hex(EX4_OUTER);
    let limits = Limits {
        max_elements: 8,
        ..Limits::default()
    };
    assert!(View::decode(&bytes, &OUTER, &limits).is_ok());
    let limits = Limits {
        max_elements: 7,
        ..Limits::default()
    };
    let err = reject(&bytes, &OUTER, &limits);
    assert_error(
        &err,
        K::TooManyElements { max: 7 },
        0x30,
        &["fixtures.Outer.nums"],
    );
    let limits = Limits {
        max_elements: 2,
        ..Limits::default()
    };
    assert_error(
        &reject(&bytes, &OUTER, &limits),
        K::TooManyElements { max: 2 },
        0,
        &[],
    );
}

#[test]
fn reject_oneof_conflict() {
    let mut m = DynamicMessage::new(&TAGGED_NO_ONEOF);
    m.set(2, Value::U64(9)).unwrap();
    m.set(3, copied(b"x")).unwrap();
    let bytes = m.to_vec().unwrap();
    let err = reject(&bytes, &TAGGED, &Limits::default());
    assert_error(
        &err,
        K::OneofConflict { first: 2, second: 3 },
        0x20,
        &["fixtures.Tagged.label"],
    );
}

#[test]
fn reject_missing_required() {
    let err = reject(&hex(EX1_SCALARS), &SCALARS_REQUIRED, &Limits::default());
    assert_error(&err, K::MissingRequired, 0, &["fixtures.ScalarsRequired.big"]);
}

// ---------------------------------------------------------------------------------------------
// Flaws found while writing the specification (see the document's "Open issues").
// ---------------------------------------------------------------------------------------------

/// A message with one `bool` field in each of the first `self.0` chunk groups (fields 64g + 1).
struct ManyGroups(u32);

impl<'a> Encode<'a> for ManyGroups {
    fn visit<V: Visitor<'a>>(&self, v: &mut V) {
        for g in 0..self.0 {
            v.scalar(64 * g + 1, true);
        }
    }
}

/// Regression: a 65536th chunk used to wrap the u16 chunk count to 0.
#[test]
fn chunk_count_past_u16_is_an_encode_error() {
    assert_eq!(
        ManyGroups(1 << 16).to_vec(),
        Err(ferry_wire::EncodeError::TooManyChunks { chunks: 1 << 16 })
    );
}

/// Regression: `get` used to compute `start + WIDTH` unchecked and panic on overflow.
#[test]
fn list_get_with_a_huge_index_is_none() {
    let ex4 = hex(EX4_OUTER);
    let view = decode(&ex4, &OUTER);
    assert_eq!(view.scalars::<i32>(2).get(usize::MAX / 4), None);
    let ex6 = hex(EX6_RECORD);
    let view = decode(&ex6, &RECORD);
    assert_eq!(view.bytes_list(2).get(usize::MAX / 8), None);
}

/// Regression: an empty zero-copy value used to become a zero-length gather entry.
#[test]
fn empty_zero_copy_value_has_no_gather_entry() {
    let pool = pool();
    let buf = pool.copy_from(b"abc").unwrap().slice(0..0);
    let value = HybridBytes::from_shared(buf, &Context::new(pool.clone()).with_threshold(0));
    let mut m = DynamicMessage::new(&ITEM);
    m.set(1, Value::Bytes(value)).unwrap();
    assert_eq!(m.layout().zero_copy_count, 0);
}

/// A `Node` message of `depth` distinct headers where each non-leaf header's `kids` list holds
/// two pointers to the same next header: 48 bytes per level, 2^depth leaves when walked.
fn aliased_tree(depth: u32) -> Vec<u8> {
    let mut b = Vec::new();
    for k in 0..depth {
        let next = 48 * (k + 1);
        let next_len: u64 = if k + 1 == depth { 8 } else { 32 };
        b.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0]); // 1 chunk, 1 entry
        b.extend_from_slice(&0u64.to_le_bytes()); // group 0, rank base 0
        b.extend_from_slice(&2u64.to_le_bytes()); // field 1
        b.extend_from_slice(&(u64::from(48 * k + 32) | 16 << 32).to_le_bytes()); // kids: 2 pointers
        let ptr = u64::from(next) | next_len << 32;
        b.extend_from_slice(&ptr.to_le_bytes());
        b.extend_from_slice(&ptr.to_le_bytes());
    }
    b.extend_from_slice(&[0; 8]); // the leaf: an empty Node
    b
}

#[test]
fn aliased_nested_headers_are_rejected() {
    let bytes = aliased_tree(3);
    let err = View::decode(&bytes, &NODE, &Limits::default()).unwrap_err();
    // Depth first: the deepest `kids` list (at 128) points twice at the leaf (at 144, 8 bytes);
    // the second pointer names a header the first one already claimed.
    assert_eq!(
        err.kind(),
        &DecodeErrorKind::StructureOverlap {
            start: 144,
            previous_end: 152
        }
    );
    assert_eq!(err.offset(), 136);
}

/// Section 6, rule 7 (walk order), which decoders check (S1): a `Node` with two empty children,
/// laid out three ways with no byte shared. Only the walk order (the list's pointer array, then
/// the first child, then the second) is accepted.
#[test]
fn structures_out_of_walk_order_are_rejected() {
    let node = |list_at: u32, children: [u32; 2]| {
        let mut b = vec![1, 0, 0, 0, 1, 0, 0, 0]; // 1 chunk, 1 entry
        b.extend_from_slice(&0u64.to_le_bytes()); // group 0, rank base 0
        b.extend_from_slice(&2u64.to_le_bytes()); // field 1, kids
        b.extend_from_slice(&(u64::from(list_at) | 16 << 32).to_le_bytes());
        let mut rest = [0u8; 32]; // the pointer array and two empty headers, from offset 32
        let array = (list_at - 32) as usize;
        for (i, child) in children.into_iter().enumerate() {
            let ptr = u64::from(child) | 8 << 32;
            rest[array + 8 * i..array + 8 * i + 8].copy_from_slice(&ptr.to_le_bytes());
        }
        b.extend_from_slice(&rest);
        b
    };
    let limits = Limits::default();
    View::decode(&node(32, [48, 56]), &NODE, &limits).expect("walk order");
    for (bytes, start) in [
        (node(48, [32, 40]), 32), // the children before their pointer array
        (node(32, [56, 48]), 48), // the second child before the first
    ] {
        let err = View::decode(&bytes, &NODE, &limits).unwrap_err();
        assert_eq!(
            err.kind(),
            &DecodeErrorKind::StructureOverlap {
                start,
                previous_end: 64
            }
        );
    }
}

/// Regression: aliased nested headers let a 968-byte message pass validation with default limits
/// and expand to 2^21 - 1 messages (`DynamicMessage::from_view` peaked at ~670 MB).
#[test]
fn aliased_nested_headers_do_not_amplify() {
    let bytes = aliased_tree(20);
    assert_eq!(bytes.len(), 968);
    assert!(View::decode(&bytes, &NODE, &Limits::default()).is_err());
}
