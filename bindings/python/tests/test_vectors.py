"""Every shared vector (tests/vectors/README.md says what a checker does)."""

import json

import pytest

import ferry
from conftest import REPO

VECTORS = REPO / "tests" / "vectors"
VALID = json.loads((VECTORS / "valid.json").read_text())
INVALID = json.loads((VECTORS / "invalid.json").read_text())


@pytest.mark.parametrize("vector", VALID, ids=[v["name"] for v in VALID])
def test_valid(schema, vector):
    t = schema.message(vector["message"])
    data = bytes.fromhex(vector["hex"])
    if vector["encodes"]:
        assert t.encode(t.from_json(vector["json"])).hex() == vector["hex"]
    assert t.to_json(t.decode(data)) == vector["json"]


@pytest.mark.parametrize("vector", INVALID, ids=[v["name"] for v in INVALID])
def test_invalid(schema, vector):
    t = schema.message(vector["message"])
    data = bytes.fromhex(vector["hex"])
    limits = vector.get("limits", {})
    want = vector["error"]
    if vector["stage"] == "validate":
        with pytest.raises(ferry.DecodeError) as e:
            t.decode(data, **limits)
        errors = [e.value]
    else:
        view = t.decode(data, **limits)
        # Read whole (every field, strings as text), as a dict and as JSON.
        errors = []
        for read in (view.to_dict, lambda: t.to_json(view)):
            with pytest.raises(ferry.DecodeError) as e:
                read()
            errors.append(e.value)
    for err in errors:
        assert (err.kind, err.offset, err.path) == (want["kind"], want["offset"], want["path"])
