"""Fixtures: the schemas of the shared vectors, the Rust programs the tests run (built with
cargo on first use), and a Rust ferry-rpc server listening on TCP, shared memory and UDP."""

import json
import os
import pathlib
import subprocess
import tempfile

import pytest

import ferry

REPO = pathlib.Path(__file__).resolve().parents[3]
SCHEMAS = REPO / "tests" / "vectors" / "schemas"
PROTOS = sorted(str(p) for p in SCHEMAS.glob("*.proto"))


@pytest.fixture(scope="session")
def schema():
    return ferry.Schema.load(PROTOS, includes=[str(SCHEMAS)])


@pytest.fixture(scope="session")
def rust_programs():
    """The `ferry` command and the test server, built by cargo (nothing to do when `cargo
    test --workspace` built them already): their paths by name."""
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "ferry-cli", "--bin", "ferry",
         "-p", "ferry-python", "--example", "test_server"],
        cwd=REPO, check=True,
    )
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    target = pathlib.Path(json.loads(meta.stdout)["target_directory"]) / "debug"
    return {"ferry": target / "ferry", "test_server": target / "examples" / "test_server"}


@pytest.fixture(scope="session")
def server(rust_programs):
    """A Rust server on `tcp://127.0.0.1:<free port>`, `shm:///<tmp>/s.sock` and
    `udp://127.0.0.1:<free port>`, serving
    tests/vectors' `vectors.Everything` for EchoMessage: its addresses by transport. It serves
    until its standard input closes."""
    with tempfile.TemporaryDirectory(prefix="ferry-pytest-") as tmp:
        proc = subprocess.Popen(
            [rust_programs["test_server"], "--proto", str(SCHEMAS / "kinds.proto"),
             "--message", "vectors.Everything",
             "tcp://127.0.0.1:0", f"shm://{tmp}/s.sock", "udp://127.0.0.1:0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        addrs = {}
        try:
            # Ready once it has printed every address (a line each, after it listens).
            while len(addrs) < 3:
                line = proc.stdout.readline()
                assert line, f"the test server exited with {proc.wait()} before listening"
                addr = line.split()[1]
                addrs[addr.split(":")[0]] = addr
            yield addrs
        finally:
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
