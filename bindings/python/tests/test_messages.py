"""Encoding dicts, reading views, JSON, and the errors, against tests/vectors' schemas."""

import gc
import math

import pytest

import ferry


def everything(schema):
    return schema.message("vectors.Everything")


FULL = {
    "i32": -7, "i64": -(2**63), "u32": 2**32 - 1, "u64": 2**64 - 1, "s32": -(2**31),
    "s64": 2**63 - 1, "fx32": 5, "fx64": 6, "sfx32": -8, "sfx64": -9, "f32": 0.5,
    "f64": -1e300, "flag": True, "text": "héllo", "raw": b"\x00\x01\xff", "color": 2,
    "child": {"i32": 1, "texts": ["a"]},
    "i32s": [1, -2], "u64s": [0, 2**64 - 1], "f32s": [1.5], "flags": [True, False],
    "texts": ["x", ""], "raws": [b"", b"zz"], "colors": [1, -5],
    "children": [{"u32": 3}, {}],
    "int_map": {3: "three", -1: "minus"}, "str_map": {"k": {"flag": True}},
    "bool_map": {True: b"t"}, "u64_map": {2**64 - 1: 2.5}, "s64_map": {-3: 2},
    "fx32_map": {7: 0.25},
    "nested": {"items": [{"i32": 4}], "tag": b"tag"},
    "opt_i32": 0, "far": 1, "very_far": -1,
}


def test_every_kind_reads_back(schema):
    E = everything(schema)
    v = E.decode(E.encode(FULL))
    for name, want in FULL.items():
        got = v[name]
        assert getattr(v, name) is not None
        if name in ("child", "nested"):
            continue
        if name == "children":
            assert [c.to_dict() for c in got] == want
        elif name == "str_map":
            assert {k: c.to_dict() for k, c in got.items()} == want
        else:
            assert got == want, name
    assert v.child.texts == ["a"]
    assert v.nested.items[0].i32 == 4
    assert bytes(v.nested.tag) == b"tag"
    assert v.HasField("opt_i32") and not v.HasField("opt_text")


def test_absent_fields_read_as_defaults(schema):
    v = everything(schema).decode(everything(schema).encode())
    assert (v.i32, v.u64, v.f64, v.flag, v.text) == (0, 0, 0.0, False, "")
    assert bytes(v.raw) == b"" and v.child is None
    assert (v.i32s, v.texts, v.children, v.int_map) == ([], [], [], {})
    assert v.to_dict() == {}


def test_round_trips(schema):
    E = everything(schema)
    data = E.encode(FULL)
    v = E.decode(data)
    # kwargs, a dict, the view itself, its dict and its JSON all encode the same bytes.
    assert E.encode(**FULL) == data
    assert E.encode(v) == data
    assert E.encode(v.to_dict()) == data
    assert E.encode(E.from_json(E.to_json(v))) == data


def test_bytes_are_views_of_the_received_buffer(schema):
    E = everything(schema)
    payload = bytes(range(256)) * 4096
    data = E.encode(raw=payload)
    mv = E.decode(data).raw
    assert mv.readonly and mv.obj is data and mv == payload
    # Only the memoryview is left: it keeps the received buffer alive.
    del data
    gc.collect()
    assert bytes(mv) == payload and mv.obj == E.encode(raw=payload)


def test_floats(schema):
    E = everything(schema)
    v = E.decode(E.encode(f64=math.inf, f32s=[math.nan, -0.0]))
    assert v.f64 == math.inf and math.isnan(v.f32s[0]) and math.copysign(1, v.f32s[1]) == -1


def test_encode_errors_name_the_field(schema):
    E = everything(schema)
    cases = [
        ({"i32": 2**31}, ["i32"], "out of range"),
        ({"u64": -1}, ["u64"], "out of range"),
        ({"text": b"x"}, ["text"], "expected a str"),
        ({"flag": 1}, ["flag"], "expected a bool"),
        ({"children": [{}, {"u32": "1"}]}, ["children", "[1]", "u32"], "expected an int"),
        ({"int_map": {1: 2}}, ["int_map", "[1]"], "expected a str"),
        ({"nope": 1}, [], "has no field `nope`"),
        ({"name": "a", "id": 1}, [], "members of one oneof"),
        ({"color": "GREEN"}, ["color"], "no value `GREEN`"),
    ]
    for fields, path, what in cases:
        with pytest.raises(ferry.EncodeError, match=what) as e:
            E.encode(fields)
        assert e.value.path == path, fields
        assert isinstance(e.value, ferry.Error)


def test_decode_errors_carry_kind_offset_and_path(schema):
    E = everything(schema)
    with pytest.raises(ferry.DecodeError) as e:
        E.decode(b"\x01\x00\x00\x00\x04")
    assert (e.value.kind, e.value.offset, e.value.path) == ("HeaderOutOfBounds", 0, [])
    with pytest.raises(ferry.DecodeError) as e:
        E.decode(E.encode(child={"child": {}}), max_depth=1)
    assert e.value.kind == "TooDeep"


def test_views_refuse_what_is_not_a_field(schema):
    v = everything(schema).decode(everything(schema).encode())
    with pytest.raises(AttributeError):
        v.nope
    with pytest.raises(KeyError):
        v["nope"]
    with pytest.raises(ferry.SchemaError):
        schema.message("vectors.Nope")
    with pytest.raises(ferry.SchemaError, match="nope.proto"):
        ferry.Schema.load(["nope.proto"])


def test_to_json_checks_the_type(schema):
    v = schema.message("vectors.Small").decode(schema.message("vectors.Small").encode(id=1))
    with pytest.raises(ferry.EncodeError):
        everything(schema).to_json(v)
    assert schema.message("vectors.Small").to_json(v) == '{"id":"1"}'


def test_a_nested_string_that_is_not_utf8(schema):
    E = everything(schema)
    data = E.encode(child={"children": [{"texts": ["ok", "QQ"]}]})
    bad = data.replace(b"QQ", b"\xff\xfe")
    v = E.decode(bad)
    path = ["vectors.Everything.child", "vectors.Everything.children", "vectors.Everything.texts"]
    errors = []
    for read in (v.to_dict, lambda: E.to_json(v), lambda: v.child.children[0].texts):
        with pytest.raises(ferry.DecodeError) as e:
            read()
        errors.append((e.value.kind, e.value.offset, e.value.path))
    assert errors[0] == errors[1] == ("InvalidUtf8", errors[0][1], path)
    # A view read on its own names the path from its own message down.
    assert errors[2] == ("InvalidUtf8", errors[0][1], path[2:])
