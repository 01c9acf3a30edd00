"""A Python client calls a Rust ferry-rpc server (examples/test_server.rs, a child process)
over TCP, shared memory and UDP."""

import threading
import time

import pytest

import ferry

TRANSPORTS = ["tcp", "shm", "udp"]
SVC = "/ferry.pytest.Test/"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_echo_and_metadata(server, transport):
    ch = ferry.Channel(server[transport])
    payload = bytes(range(256)) * 300
    assert ch.call(SVC + "Echo", payload) == payload
    assert ch.call(SVC + "Echo", b"") == b""
    assert ch.call(SVC + "Metadata", b"", metadata=[("x-echo", b"\x00hi")]) == b"\x00hi"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_status_codes(server, transport):
    ch = ferry.Channel(server[transport])
    for code in (1, 3, 5, 9, 16):
        with pytest.raises(ferry.RpcError) as e:
            ch.call(SVC + "Fail", f"{code}:code {code}".encode())
        assert (e.value.code, e.value.details) == (code, f"code {code}")
    with pytest.raises(ferry.RpcError) as e:
        ch.call("/ferry.pytest.Test/Nope", b"")
    assert e.value.code_name == "UNIMPLEMENTED"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_rust_reads_what_python_encoded(server, schema, transport):
    """EchoMessage decodes the request in Rust and answers it re-encoded: a Ferry message
    that over shared memory stays in the server's memory."""
    E = schema.message("vectors.Everything")
    ch = ferry.Channel(server[transport])
    request = E.encode(text="from python", i64s=[1, -2], str_map={"k": {"raw": b"x" * 5000}})
    view = ch.call(SVC + "EchoMessage", request, response=E)
    assert E.encode(view) == request
    # Without `response=`: the bytes over TCP and UDP; over shared memory the answer stays in
    # the server's memory, where only a descriptor can read it.
    if transport != "shm":
        assert ch.call(SVC + "EchoMessage", request) == request
    else:
        with pytest.raises(ferry.RpcError, match="pass response=") as e:
            ch.call(SVC + "EchoMessage", request)
        assert e.value.code_name == "INTERNAL"
    with pytest.raises(ferry.RpcError) as e:
        ch.call(SVC + "EchoMessage", b"\x01\x02")
    assert e.value.code_name == "INVALID_ARGUMENT" and "decode error" in e.value.details


def test_a_deadline(server):
    ch = ferry.Channel(server["tcp"])
    with pytest.raises(ferry.RpcError) as e:
        ch.call(SVC + "Hold", b"", timeout=0.05)
    assert e.value.code_name == "DEADLINE_EXCEEDED"
    # The deadline went with the call: the server's handler sees it pass and stops holding
    # (else the next test would release this call instead of its own).
    give_up = time.monotonic() + 30
    while ch.call(SVC + "Held", b"") != b"0":
        assert time.monotonic() < give_up, "the held call outlived its deadline by 30 s"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_gil_is_released_while_a_call_waits(server, transport):
    """A thread's call is held by the server until this thread, which first waits for the
    server to say it holds it, releases it: this thread runs only if the waiting call let go
    of the GIL (else the held call fails at its deadline)."""
    answers = []

    def held():
        try:
            answers.append(ferry.Channel(server[transport]).call(SVC + "Hold", b"", timeout=30))
        except ferry.RpcError as e:
            answers.append(e)

    ch = ferry.Channel(server[transport])
    t = threading.Thread(target=held)
    t.start()
    while ch.call(SVC + "Held", b"") != b"1":
        assert t.is_alive(), answers
    ch.call(SVC + "Release", b"")
    t.join()
    assert answers == [b"released"]


def test_bad_addresses():
    with pytest.raises(ferry.RpcError) as e:
        ferry.Channel("sctp://127.0.0.1:1")
    assert e.value.code_name == "INVALID_ARGUMENT"
    assert "sctp" in str(e.value)
