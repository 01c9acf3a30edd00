#!/usr/bin/env python3
"""Reads messages of schema/interop.fbs with PyPI's `flatbuffers` package and checks every field.

Usage: read_interop.py GENERATED_DIR EXPECTED_JSON

GENERATED_DIR holds `flatc --python` output for schema/interop.fbs (the `interop` package).
EXPECTED_JSON, written by tests/python_interop.rs, lists the messages (files beside it) with how
each was finished and the value of every field, absent ones as null. Exits 0 and prints
"checked N messages" when every field of every message matches; otherwise prints each mismatch
(message, field path, expected, found) on stderr and exits 1.

What it is not: a verifier. The Python runtime has none; the Rust tests run the stock verifier.
"""

import json
import os
import struct
import sys


def main():
    gen_dir, expected_path = sys.argv[1], sys.argv[2]
    sys.path.insert(0, gen_dir)
    import flatbuffers  # noqa: F401  (PyPI's runtime, which the generated code imports)
    from interop.Item import Item
    from interop.Note import Note
    from interop.Root import Root

    with open(expected_path) as f:
        expected = json.load(f)
    base = os.path.dirname(expected_path)
    errors = []

    def check(where, want, got):
        if want != got:
            errors.append(f"{where}: expected {want!r}, found {got!r}")

    def f32(x):
        # The message holds a float32; JSON holds it exactly as a double.
        return struct.unpack("<f", struct.pack("<f", x))[0]

    def text(b):
        return None if b is None else b.decode("utf-8")

    def vector(where, want, is_none, length, get):
        check(f"{where} present", want is not None, not is_none())
        if want is None or is_none():
            return
        check(f"{where} length", len(want), length())
        got = [get(j) for j in range(min(len(want), length()))]
        if got != want:
            first = next(i for i, (a, b) in enumerate(zip(want, got)) if a != b)
            check(f"{where}[{first}]", want[first], got[first])

    def check_vec3(where, want, v):
        check(f"{where} present", want is not None, v is not None)
        if want is None or v is None:
            return
        got = {"tag": v.Tag(), "z": v.Z(), "x": v.X(), "y": v.Y(), "color": v.Color(), "id": v.Id()}
        want = dict(want, x=f32(want["x"]))
        check(where, want, got)

    def check_item(where, want, item):
        check(f"{where} present", want is not None, item is not None)
        if want is None or item is None:
            return
        check(f"{where}.id", want["id"], item.Id())
        check(f"{where}.label", want["label"], text(item.Label()))
        check(f"{where}.weight", want["weight"], item.Weight())
        vector(f"{where}.tags", want["tags"], item.TagsIsNone, item.TagsLength,
               lambda j: text(item.Tags(j)))

    def check_note(where, want, note):
        check(f"{where}.text", want["text"], text(note.Text()))
        check(f"{where}.score", want["score"], note.Score())

    for m in expected["messages"]:
        where = m["file"]
        with open(os.path.join(base, m["file"]), "rb") as f:
            buf = bytearray(f.read())
        offset = 0
        if m["size_prefixed"]:
            check(f"{where} size prefix", len(buf) - 4, struct.unpack_from("<I", buf, 0)[0])
            offset = 4
        check(f"{where} identifier", m["identified"],
              Root.RootBufferHasIdentifier(buf, 0, size_prefixed=m["size_prefixed"]))
        r = Root.GetRootAs(buf, offset)
        want = m["root"]
        for field, get in [
            ("u8", r.U8), ("i8", r.I8), ("u16", r.U16), ("i16", r.I16),
            ("u32", r.U32), ("i32", r.I32), ("u64", r.U64), ("i64", r.I64),
            ("f64", r.F64), ("flag", r.Flag), ("color", r.Color), ("level", r.Level),
            ("maybe", r.Maybe),
        ]:
            check(f"{where}.{field}", want[field], get())
        check(f"{where}.f32", f32(want["f32"]), r.F32())
        check_vec3(f"{where}.pos", want["pos"], r.Pos())
        check(f"{where}.name", want["name"], text(r.Name()))
        check(f"{where}.note", want["note"], text(r.Note()))
        vector(f"{where}.bytes", want["bytes"], r.BytesIsNone, r.BytesLength, r.Bytes)
        vector(f"{where}.ints", want["ints"], r.IntsIsNone, r.IntsLength, r.Ints)
        vector(f"{where}.longs", want["longs"], r.LongsIsNone, r.LongsLength, r.Longs)
        vector(f"{where}.doubles", want["doubles"], r.DoublesIsNone, r.DoublesLength, r.Doubles)
        vector(f"{where}.flags", want["flags"], r.FlagsIsNone, r.FlagsLength, r.Flags)
        vector(f"{where}.colors", want["colors"], r.ColorsIsNone, r.ColorsLength, r.Colors)
        vector(f"{where}.names", want["names"], r.NamesIsNone, r.NamesLength,
               lambda j: text(r.Names(j)))
        check(f"{where}.points present", want["points"] is not None, not r.PointsIsNone())
        if want["points"] is not None and not r.PointsIsNone():
            check(f"{where}.points length", len(want["points"]), r.PointsLength())
            for j, p in enumerate(want["points"][: r.PointsLength()]):
                check_vec3(f"{where}.points[{j}]", p, r.Points(j))
        check(f"{where}.items present", want["items"] is not None, not r.ItemsIsNone())
        if want["items"] is not None and not r.ItemsIsNone():
            check(f"{where}.items length", len(want["items"]), r.ItemsLength())
            for j, it in enumerate(want["items"][: r.ItemsLength()]):
                check_item(f"{where}.items[{j}]", it, r.Items(j))
        payload = want["payload"]
        check(f"{where}.payload_type", payload["type"], r.PayloadType())
        table = r.Payload()
        check(f"{where}.payload present", payload["value"] is not None, table is not None)
        if table is not None and payload["value"] is not None:
            if r.PayloadType() == 1:
                item = Item()
                item.Init(table.Bytes, table.Pos)
                check_item(f"{where}.payload(Item)", payload["value"], item)
            elif r.PayloadType() == 2:
                note = Note()
                note.Init(table.Bytes, table.Pos)
                check_note(f"{where}.payload(Note)", payload["value"], note)
        check_item(f"{where}.child", want["child"], r.Child())
        vector(f"{where}.nested", want["nested"], r.NestedIsNone, r.NestedLength, r.Nested)
        if want["nested"] is not None and not r.NestedIsNone():
            check_item(f"{where}.nested (as Item)", want["nested_item"], r.NestedNestedRoot())

    if errors:
        for e in errors[:50]:
            print(e, file=sys.stderr)
        print(f"{len(errors)} mismatches", file=sys.stderr)
        sys.exit(1)
    print(f"checked {len(expected['messages'])} messages")


if __name__ == "__main__":
    main()
