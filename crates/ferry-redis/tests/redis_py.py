#!/usr/bin/env python3
"""redis-py (with and without hiredis) against a Redis-protocol server.

Run by `tests/clients.rs` (`redis_py_every_command`) against a Ferry server it starts, or by
hand against a real Redis to check that every expectation here is Redis's own behaviour:

    redis-server --port 27392 --save '' --appendonly no --daemonize yes
    redis-server --port 27393 --save '' --appendonly no --daemonize yes --requirepass s3cret
    python3 tests/redis_py.py --server redis --port 27392 --auth-port 27393 --password s3cret
    redis-cli -p 27392 shutdown nosave; redis-cli -p 27393 -a s3cret shutdown nosave

Every command Ferry has is exercised, in four passes: RESP2 and RESP3 clients, each with
hiredis (redis-py's default parser when hiredis is installed) and with redis-py's pure-Python
parser and request packer. The server's keyspace is flushed: never point it at data you keep.

Expectations are Redis 7.0's replies, except the few marked `FERRY DIFFERS` where Ferry is
documented to differ (database 0 only; its own command table and INFO): those check Ferry's
behaviour with `--server ferry` (the default) and Redis's with `--server redis`.

Exit status: 0 when every check passed; 1, with the pass, the check and got/want on stderr, at
the first mismatch (or after all of them with --keep-going); 2 when redis or hiredis cannot be
imported.
"""

import argparse
import random
import sys
import threading
import time
import traceback

try:
    import hiredis  # noqa: F401  (only its presence matters: redis-py picks it up)
    import redis
    from redis.connection import Encoder, PythonRespSerializer
    from redis._parsers import _HiredisParser, _RESP2Parser, _RESP3Parser
    from redis.utils import HIREDIS_AVAILABLE
except ImportError as e:
    print(f"redis_py.py: cannot import redis-py and hiredis: {e}", file=sys.stderr)
    sys.exit(2)

SOCKET_TIMEOUT = 20  # seconds; a server that stops answering fails the run instead of hanging it


class Mismatch(Exception):
    pass


def short(v):
    """`repr` of `v`, with long byte strings summarized (a 1 MiB mismatch stays readable)."""
    if isinstance(v, (bytes, bytearray)) and len(v) > 64:
        return f"<{len(v)} bytes {bytes(v[:16])!r}...{bytes(v[-8:])!r}>"
    if isinstance(v, (list, tuple)) and len(v) > 16:
        return f"<{type(v).__name__} of {len(v)}: {[short(x) for x in v[:8]]}...>"
    return repr(v)


def first_difference(got, want):
    if isinstance(got, (bytes, bytearray)) and isinstance(want, (bytes, bytearray)):
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                return f" (first difference at byte {i}: {a:#04x} != {b:#04x})"
        return f" (lengths {len(got)} != {len(want)})"
    return ""


def eq(got, want, what):
    if got != want:
        raise Mismatch(f"{what}: got {short(got)}, want {short(want)}{first_difference(got, want)}")


def check(cond, what):
    if not cond:
        raise Mismatch(what)


def fails(what, fn, text, cls=redis.ResponseError):
    """`fn()` must raise `cls` whose text (as redis-py gives it) is exactly `text`."""
    try:
        got = fn()
    except redis.RedisError as e:
        if not isinstance(e, cls):
            raise Mismatch(f"{what}: got {type(e).__name__}({str(e)!r}), want {cls.__name__}({text!r})")
        eq(str(e), text, f"{what}: error text")
        return
    raise Mismatch(f"{what}: got {short(got)}, want {cls.__name__}({text!r})")


def text(v):
    """redis-py decodes some replies on RESP2 and not on RESP3: compare them as text."""
    return v.decode() if isinstance(v, bytes) else v


def raw(r, *args):
    """One command on a connection of `r`, without redis-py's response callbacks: the parser's
    own result (RESP3 maps as dicts, RESP2 as flat lists)."""
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def parser_of(r):
    conn = r.connection_pool.get_connection()
    try:
        return type(conn._parser)
    finally:
        r.connection_pool.release(conn)


class Pass:
    """One client configuration; `client()` makes clients with it (and extra arguments)."""

    def __init__(self, args, protocol, pure):
        self.args = args
        self.protocol = protocol
        self.pure = pure
        self.name = f"RESP{protocol} {'pure-Python parser' if pure else 'hiredis parser'}"

    def client(self, port=None, **kw):
        opts = dict(
            host=self.args.host,
            port=port or self.args.port,
            protocol=self.protocol,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
        )
        if self.pure:
            opts["parser_class"] = _RESP3Parser if self.protocol == 3 else _RESP2Parser
            opts["command_packer"] = PythonRespSerializer(6000, Encoder("utf-8", "strict", False).encode)
        opts.update(kw)
        # parser_class and command_packer are connection arguments: through a pool of our own.
        client = redis.Redis(connection_pool=redis.ConnectionPool(**opts))
        client.auto_close_connection_pool = True
        return client


# ---------------------------------------------------------------------------------------------
# Connection and server commands


def t_parser_in_use(p, r):
    want = (_RESP3Parser if p.protocol == 3 else _RESP2Parser) if p.pure else _HiredisParser
    eq(parser_of(r), want, "parser class in use")


def t_ping_echo(p, r):
    eq(r.ping(), True, "PING")
    eq(raw(r, "PING"), b"PONG", "PING reply")
    eq(raw(r, "PING", "hi there"), b"hi there", "PING message")
    eq(r.echo(b"\x00\r\n\xff"), b"\x00\r\n\xff", "ECHO binary")
    eq(r.echo(b""), b"", "ECHO empty")
    fails("ECHO arity", lambda: raw(r, "ECHO"), "wrong number of arguments for 'echo' command")
    fails("PING arity", lambda: raw(r, "PING", "a", "b"), "wrong number of arguments for 'ping' command")


def t_hello(p, r):
    # On this connection the client already sent HELLO 3 (RESP3) or nothing (RESP2).
    for proto in (2, 3) if p.protocol == 3 else (2,):
        # The reply is in the protocol asked for: a map (RESP3) or a flat list (RESP2).
        h = raw(r, "HELLO", proto)
        if proto == 3:
            check(isinstance(h, dict), f"HELLO 3: a map, got {short(h)}")
        else:
            check(isinstance(h, list) and len(h) == 14, f"HELLO 2: a flat list of 14, got {short(h)}")
            h = dict(zip(h[::2], h[1::2]))
        keys = [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]
        eq(sorted(h), sorted(keys), "HELLO keys")
        eq(h[b"proto"], proto, "HELLO proto")
        eq(h[b"mode"], b"standalone", "HELLO mode")
        eq(h[b"role"], b"master", "HELLO role")
        eq(h[b"modules"], [], "HELLO modules")
        eq(h[b"id"], r.client_id(), "HELLO id is CLIENT ID")
        check(isinstance(h[b"server"], bytes) and h[b"server"], f"HELLO server: {h[b'server']!r}")
        v = h[b"version"].split(b".")
        check(len(v) == 3 and all(x.isdigit() for x in v), f"HELLO version x.y.z: {h[b'version']!r}")
    if p.protocol == 3:
        raw(r, "HELLO", 3)  # back to what the client expects
    h = raw(r, "HELLO")  # no version: the current protocol
    if p.protocol == 2:
        h = dict(zip(h[::2], h[1::2]))
    eq(h[b"proto"], p.protocol, "HELLO without a version keeps the protocol")
    fails("HELLO 4", lambda: raw(r, "HELLO", 4), "NOPROTO unsupported protocol version")
    fails("HELLO 1", lambda: raw(r, "HELLO", 1), "NOPROTO unsupported protocol version")
    fails("HELLO abc", lambda: raw(r, "HELLO", "abc"), "Protocol version is not an integer or out of range")
    eq(r.ping(), True, "PING after HELLO errors")


def t_auth_without_password(p, r):
    fails(
        "AUTH on a server without a password",
        lambda: raw(r, "AUTH", "x"),
        "AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?",
        redis.AuthenticationError,
    )


def t_select(p, r):
    r.set("sel", "0")
    eq(r.execute_command("SELECT", 0), True, "SELECT 0")
    fails("SELECT abc", lambda: r.execute_command("SELECT", "abc"), "value is not an integer or out of range")
    fails("SELECT 16", lambda: r.execute_command("SELECT", 16), "DB index is out of range")
    fails("SELECT -1", lambda: r.execute_command("SELECT", -1), "DB index is out of range")
    eq(r.execute_command("SELECT", 1), True, "SELECT 1")
    eq(r.get("sel"), None, "db 1 is empty")
    eq(r.execute_command("SELECT", 0), True, "SELECT 0 again")
    eq(r.get("sel"), b"0", "still in db 0")


def t_transactions(p, r):
    r.delete("tx", "tx2")
    pipe = r.pipeline(transaction=True)
    pipe.set("tx", "1").incr("tx").lpush("tx", "x").get("tx")
    got = pipe.execute(raise_on_error=False)
    eq(got[:2], [True, 2], "MULTI/EXEC replies")
    eq(isinstance(got[2], redis.ResponseError), True, "a WRONGTYPE inside EXEC")
    eq(got[3], b"2", "the commands after it ran")
    other = p.client()
    with r.pipeline(transaction=True) as w:
        w.watch("tx")
        other.set("tx", "changed")
        w.multi()
        w.set("tx2", "never")
        fails("EXEC after a watched key changed", w.execute, "Watched variable changed.", redis.WatchError)
    eq(r.exists("tx2"), 0, "nothing ran")
    other.close()


def t_quit(p, r):
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("QUIT")
        eq(conn.read_response(), b"OK", "QUIT reply")
        try:
            got = conn.read_response()
        except redis.ConnectionError:
            pass
        else:
            raise Mismatch(f"after QUIT the server must close the connection; read {short(got)}")
    finally:
        conn.disconnect()
        r.connection_pool.release(conn)
    eq(r.ping(), True, "a new connection after QUIT")


def t_client(p, r):
    cid = r.client_id()
    check(isinstance(cid, int) and cid > 0, f"CLIENT ID positive int: {cid!r}")
    eq(r.client_id(), cid, "CLIENT ID stable on one connection")
    other = p.client()
    oid = other.client_id()
    check(oid != cid, f"two connections have different ids: {cid} {oid}")
    eq(r.client_getname(), None, "CLIENT GETNAME before SETNAME")
    eq(r.client_setname("fred-1"), True, "CLIENT SETNAME")
    eq(text(r.client_getname()), "fred-1", "CLIENT GETNAME")
    eq(other.client_getname(), None, "names are per connection")
    fails(
        "CLIENT SETNAME with a space",
        lambda: raw(r, "CLIENT", "SETNAME", "a b"),
        "Client names cannot contain spaces, newlines or special characters.",
    )
    eq(text(r.client_getname()), "fred-1", "name kept after a refused SETNAME")
    eq(raw(r, "CLIENT", "SETNAME", ""), b"OK", "CLIENT SETNAME '' clears")
    eq(r.client_getname(), None, "CLIENT GETNAME after clearing")
    named = p.client(client_name="named-at-connect")
    eq(text(named.client_getname()), "named-at-connect", "client_name= (SETNAME on connect)")
    fails("CLIENT bad", lambda: raw(r, "CLIENT", "BAD"), "unknown subcommand 'BAD'. Try CLIENT HELP.")
    arity = "wrong number of arguments for 'client|id' command"
    fails("CLIENT ID x", lambda: raw(r, "CLIENT", "ID", "x"), arity)
    fails("CLIENT arity", lambda: raw(r, "CLIENT"), "wrong number of arguments for 'client' command")
    other.close()
    named.close()


def t_command(p, r):
    n = r.command_count()
    if p.args.server == "ferry":
        # FERRY DIFFERS: its own command table (cmd/table.rs; the Rust test passes its length).
        eq(n, p.args.ferry_commands, "COMMAND COUNT (Ferry's table)")
    else:
        check(n > 200, f"COMMAND COUNT: {n}")
    table = r.command()  # redis-py's parse: what its cluster client reads
    eq(len(table), n, "COMMAND entries == COMMAND COUNT")
    for name, arity, flag, first, last, step in [
        ("get", 2, "readonly", 1, 1, 1),
        ("set", -3, "write", 1, 1, 1),
        ("mset", -3, "write", 1, -1, 2),
        ("del", -2, "write", 1, -1, 1),
        ("lrange", 4, "readonly", 1, 1, 1),
        ("ping", -1, "fast", 0, 0, 0),
    ]:
        c = table.get(name)
        check(c is not None, f"COMMAND has {name}")
        eq(c["arity"], arity, f"COMMAND {name} arity")
        check(flag in c["flags"], f"COMMAND {name} flags {c['flags']} have {flag}")
        keys = (c["first_key_pos"], c["last_key_pos"], c["step_count"])
        eq(keys, (first, last, step), f"COMMAND {name} keys")
    docs = raw(r, "COMMAND", "DOCS", "get")
    if p.protocol == 2:
        eq(len(docs), 2, "COMMAND DOCS get: [name, doc]")
        eq(docs[0], b"get", "COMMAND DOCS name")
        doc = dict(zip(docs[1][::2], docs[1][1::2]))
    else:
        eq(list(docs), [b"get"], "COMMAND DOCS get: {name: doc}")
        doc = docs[b"get"]
    eq(doc[b"group"], b"string", "COMMAND DOCS get group")
    check(doc[b"summary"], "COMMAND DOCS get has a summary")  # FERRY DIFFERS in wording: not compared
    eq(raw(r, "COMMAND", "DOCS", "nosuchcommand"), {} if p.protocol == 3 else [], "COMMAND DOCS unknown")
    fails("COMMAND foo", lambda: raw(r, "COMMAND", "FOO"), "unknown subcommand 'FOO'. Try COMMAND HELP.")


def t_config_get(p, r):
    got = r.config_get("maxmemory")
    eq(list(got), ["maxmemory"], "CONFIG GET maxmemory keys")
    check(got["maxmemory"].isdigit(), f"CONFIG GET maxmemory is a number: {got!r}")
    eq(r.config_get("no-such-parameter"), {}, "CONFIG GET unknown")
    fails("CONFIG arity", lambda: raw(r, "CONFIG"), "wrong number of arguments for 'config' command")


def t_info_dbsize_flush(p, r):
    eq(r.flushall(), True, "FLUSHALL")
    eq(r.dbsize(), 0, "DBSIZE after FLUSHALL")
    info = r.info()
    check(isinstance(info.get("redis_version"), str), f"INFO redis_version: {info.get('redis_version')!r}")
    other = p.client()
    other.ping()
    eq(r.info()["connected_clients"] >= 2, True, "INFO connected_clients counts both clients")
    other.close()
    check("db0" not in r.info("keyspace"), "INFO keyspace has no db0 when empty")
    r.mset({"i1": "a", "i2": "b", "i3": "c"})
    r.expire("i1", 100)
    r.rpush("il", "x")
    eq(r.dbsize(), 4, "DBSIZE")
    db0 = r.info("keyspace")["db0"]
    eq((db0["keys"], db0["expires"]), (4, 1), "INFO keyspace db0 keys, expires")
    eq(r.info()["db0"]["keys"], 4, "INFO (all sections) db0")
    # FERRY DIFFERS: the other INFO fields are Ferry's own; only the ones clients read are checked.
    eq(r.flushdb(), True, "FLUSHDB")
    eq(r.dbsize(), 0, "DBSIZE after FLUSHDB")
    r.set("i1", "a")
    eq(r.flushdb(asynchronous=True), True, "FLUSHDB ASYNC")
    eq(r.dbsize(), 0, "DBSIZE after FLUSHDB ASYNC")
    r.set("i1", "a")
    eq(r.flushall(asynchronous=True), True, "FLUSHALL ASYNC")
    eq(r.dbsize(), 0, "DBSIZE after FLUSHALL ASYNC")
    eq(raw(r, "FLUSHDB", "SYNC"), b"OK", "FLUSHDB SYNC")
    fails("FLUSHDB bad", lambda: raw(r, "FLUSHDB", "BAD"), "syntax error")
    fails("DBSIZE arity", lambda: raw(r, "DBSIZE", "x"), "wrong number of arguments for 'dbsize' command")


# ---------------------------------------------------------------------------------------------
# Strings


def t_get_set(p, r):
    eq(r.get("s"), None, "GET missing")
    eq(r.set("s", "v1"), True, "SET")
    eq(r.get("s"), b"v1", "GET")
    eq(r.set("s", "v2", nx=True), None, "SET NX on an existing key")
    eq(r.get("s"), b"v1", "SET NX did not write")
    eq(r.set("s2", "v", xx=True), None, "SET XX on a missing key")
    eq(r.exists("s2"), 0, "SET XX did not create")
    eq(r.set("s2", "v", nx=True), True, "SET NX on a missing key")
    eq(r.set("s", "v3", xx=True), True, "SET XX on an existing key")
    eq(r.set("s", "v4", get=True), b"v3", "SET GET returns the old value")
    eq(r.set("s3", "v", get=True), None, "SET GET on a missing key")
    eq(r.get("s3"), b"v", "SET GET wrote")
    eq(r.set("s", "v5", nx=True, get=True), b"v4", "SET NX GET on an existing key returns it")
    eq(r.get("s"), b"v4", "SET NX GET did not write")
    eq(r.set("e", "v", ex=100), True, "SET EX")
    t = r.ttl("e")
    check(0 < t <= 100, f"TTL after SET EX 100: {t}")
    eq(r.set("e", "v", px=100000), True, "SET PX")
    t = r.pttl("e")
    check(0 < t <= 100000, f"PTTL after SET PX 100000: {t}")
    eq(r.set("e", "w"), True, "SET without EX")
    eq(r.ttl("e"), -1, "plain SET clears the TTL")
    fails("SET NX XX", lambda: raw(r, "SET", "k", "v", "NX", "XX"), "syntax error")
    fails("SET EX PX", lambda: raw(r, "SET", "k", "v", "EX", "10", "PX", "10"), "syntax error")
    fails("SET bad option", lambda: raw(r, "SET", "k", "v", "FOO"), "syntax error")
    fails("SET EX missing", lambda: raw(r, "SET", "k", "v", "EX"), "syntax error")
    nan = "value is not an integer or out of range"
    fails("SET EX abc", lambda: raw(r, "SET", "k", "v", "EX", "abc"), nan)
    fails("SET EX 0", lambda: raw(r, "SET", "k", "v", "EX", "0"), "invalid expire time in 'set' command")
    fails("SET PX -1", lambda: raw(r, "SET", "k", "v", "PX", "-1"), "invalid expire time in 'set' command")
    fails(
        "SET EX overflow",
        lambda: raw(r, "SET", "k", "v", "EX", "9223372036854775807"),
        "invalid expire time in 'set' command",
    )
    eq(r.exists("k"), 0, "failed SETs wrote nothing")
    fails("SET arity", lambda: raw(r, "SET", "k"), "wrong number of arguments for 'set' command")
    fails("GET arity", lambda: raw(r, "GET"), "wrong number of arguments for 'get' command")
    fails("GET arity 2", lambda: raw(r, "GET", "a", "b"), "wrong number of arguments for 'get' command")


def t_multi_key_strings(p, r):
    eq(r.mset({"m1": "1", "m2": b"\x00two", "m3": ""}), True, "MSET")
    r.rpush("mlist", "x")
    got = r.mget("m1", "nokey", "m2", "mlist", "m3")
    eq(got, [b"1", None, b"\x00two", None, b""], "MGET (a list is nil)")
    eq(raw(r, "MSET", "m1", "a", "m1", "b"), b"OK", "MSET same key twice")
    eq(r.get("m1"), b"b", "MSET: the last value wins")
    fails("MSET odd", lambda: raw(r, "MSET", "a", "1", "b"), "wrong number of arguments for 'mset' command")
    fails("MGET arity", lambda: raw(r, "MGET"), "wrong number of arguments for 'mget' command")
    eq(r.setnx("m1", "c"), False, "SETNX existing")
    eq(r.setnx("mnew", "c"), True, "SETNX new")
    eq(r.get("mnew"), b"c", "SETNX wrote")
    eq(r.getset("mnew", "d"), b"c", "GETSET returns the old value")
    eq(r.getset("mnone", "e"), None, "GETSET on a missing key")
    eq(r.get("mnone"), b"e", "GETSET wrote")
    r.expire("mnew", 100)
    r.getset("mnew", "f")
    eq(r.ttl("mnew"), -1, "GETSET clears the TTL")
    eq(r.getdel("mnew"), b"f", "GETDEL")
    eq(r.getdel("mnew"), None, "GETDEL again")
    eq(r.exists("mnew"), 0, "GETDEL deleted")
    eq(r.append("ap", "ab"), 2, "APPEND creates")
    eq(r.append("ap", b"\x00cd"), 5, "APPEND extends")
    eq(r.append("ap", ""), 5, "APPEND empty")
    eq(r.get("ap"), b"ab\x00cd", "APPEND value")
    eq(r.strlen("ap"), 5, "STRLEN")
    eq(r.strlen("nokey"), 0, "STRLEN missing")
    r.set("ttlkeep", "x", ex=100)
    r.append("ttlkeep", "y")
    check(r.ttl("ttlkeep") > 0, "APPEND keeps the TTL")


def t_counters(p, r):
    eq(r.incr("c"), 1, "INCR creates")
    eq(r.incr("c"), 2, "INCR")
    eq(r.incrby("c", 40), 42, "INCRBY")
    eq(r.incrby("c", -50), -8, "INCRBY negative")
    eq(r.decr("c"), -9, "DECR")
    eq(r.decrby("c", -10), 1, "DECRBY negative")
    eq(r.decrby("c", 3), -2, "DECRBY")
    eq(r.decr("c2"), -1, "DECR creates")
    eq(r.get("c"), b"-2", "counter stored as text")
    r.set("c", "100", ex=100)
    eq(r.incr("c"), 101, "INCR on a SET number")
    check(r.ttl("c") > 0, "INCR keeps the TTL")
    for bad in ["abc", "1.5", " 1", "1 ", "", "9223372036854775808", "0x10"]:
        r.set("nan", bad)
        fails(f"INCR on {bad!r}", lambda: r.incr("nan"), "value is not an integer or out of range")
    eq(r.get("nan"), b"0x10", "a failed INCR leaves the value")
    fails("INCRBY abc", lambda: raw(r, "INCRBY", "c", "abc"), "value is not an integer or out of range")
    fails("DECRBY 1.0", lambda: raw(r, "DECRBY", "c", "1.0"), "value is not an integer or out of range")
    r.set("big", "9223372036854775807")
    fails("INCR overflow", lambda: r.incr("big"), "increment or decrement would overflow")
    fails("INCRBY overflow", lambda: r.incrby("big", 1), "increment or decrement would overflow")
    r.set("small", "-9223372036854775808")
    fails("DECR overflow", lambda: r.decr("small"), "increment or decrement would overflow")
    r.set("five", "5")
    fails(
        "INCRBY overflow from 5",
        lambda: r.incrby("five", 9223372036854775807),
        "increment or decrement would overflow",
    )
    fails(
        "DECRBY i64::MIN",
        lambda: raw(r, "DECRBY", "five", "-9223372036854775808"),
        "decrement would overflow",
    )
    eq(r.get("big"), b"9223372036854775807", "an overflowing INCR leaves the value")
    eq(r.incrby("zero", 0), 0, "INCRBY 0 creates 0")


# ---------------------------------------------------------------------------------------------
# Keys


def t_del_exists_type(p, r):
    r.mset({"d1": "a", "d2": "b", "d3": "c"})
    r.rpush("dl", "x")
    eq(r.exists("d1", "d1", "nokey", "dl"), 3, "EXISTS counts repeats")
    eq(r.type("d1"), b"string", "TYPE string")
    eq(r.type("dl"), b"list", "TYPE list")
    eq(r.type("nokey"), b"none", "TYPE none")
    eq(r.delete("d1", "d2", "nokey", "d1"), 2, "DEL counts deleted keys")
    eq(r.unlink("d3", "dl", "nokey"), 2, "UNLINK")
    eq(r.exists("d1", "d2", "d3", "dl"), 0, "all deleted")
    fails("DEL arity", lambda: raw(r, "DEL"), "wrong number of arguments for 'del' command")
    fails("EXISTS arity", lambda: raw(r, "EXISTS"), "wrong number of arguments for 'exists' command")


def t_expiry(p, r):
    r.set("x", "v")
    eq(r.ttl("x"), -1, "TTL without expiry")
    eq(r.pttl("x"), -1, "PTTL without expiry")
    eq(r.ttl("nokey"), -2, "TTL missing")
    eq(r.pttl("nokey"), -2, "PTTL missing")
    eq(r.expire("nokey", 10), False, "EXPIRE missing")
    eq(r.pexpire("nokey", 10), False, "PEXPIRE missing")
    eq(r.expire("x", 100), True, "EXPIRE")
    t = r.ttl("x")
    check(0 < t <= 100, f"TTL after EXPIRE 100: {t}")
    t = r.pttl("x")
    check(0 < t <= 100000, f"PTTL after EXPIRE 100: {t}")
    eq(r.pexpire("x", 300000), True, "PEXPIRE")
    t = r.ttl("x")
    check(100 < t <= 300, f"TTL after PEXPIRE 300000: {t}")
    eq(r.persist("x"), True, "PERSIST")
    eq(r.persist("x"), False, "PERSIST without TTL")
    eq(r.persist("nokey"), False, "PERSIST missing")
    eq(r.ttl("x"), -1, "TTL after PERSIST")
    # Options (Redis 7.0).
    eq(r.expire("x", 10, xx=True), False, "EXPIRE XX without TTL")
    eq(r.expire("x", 10, gt=True), False, "EXPIRE GT without TTL (no TTL is infinite)")
    eq(r.expire("x", 20, nx=True), True, "EXPIRE NX without TTL")
    eq(r.expire("x", 30, nx=True), False, "EXPIRE NX with TTL")
    eq(r.expire("x", 5, gt=True), False, "EXPIRE GT smaller")
    eq(r.expire("x", 50, gt=True), True, "EXPIRE GT larger")
    eq(r.expire("x", 100, lt=True), False, "EXPIRE LT larger")
    eq(r.pexpire("x", 40000, lt=True), True, "PEXPIRE LT smaller")
    eq(r.expire("x", 60, xx=True), True, "EXPIRE XX with TTL")
    r.persist("x")
    eq(r.expire("x", 10, lt=True), True, "EXPIRE LT without TTL")
    fails(
        "EXPIRE NX XX",
        lambda: raw(r, "EXPIRE", "x", "10", "NX", "XX"),
        "NX and XX, GT or LT options at the same time are not compatible",
    )
    fails(
        "EXPIRE GT LT",
        lambda: raw(r, "EXPIRE", "x", "10", "GT", "LT"),
        "GT and LT options at the same time are not compatible",
    )
    fails("EXPIRE bad option", lambda: raw(r, "EXPIRE", "x", "10", "FOO"), "Unsupported option FOO")
    fails("EXPIRE abc", lambda: raw(r, "EXPIRE", "x", "abc"), "value is not an integer or out of range")
    fails(
        "EXPIRE overflow",
        lambda: raw(r, "EXPIRE", "x", "9223372036854775807"),
        "invalid expire time in 'expire' command",
    )
    fails(
        "PEXPIRE overflow",
        lambda: raw(r, "PEXPIRE", "x", "9223372036854775807"),
        "invalid expire time in 'pexpire' command",
    )
    # A TTL in the past deletes.
    r.set("gone", "v")
    eq(r.expire("gone", -1), True, "EXPIRE negative")
    eq(r.exists("gone"), 0, "EXPIRE negative deleted the key")
    r.set("gone", "v")
    eq(r.pexpire("gone", 0), True, "PEXPIRE 0")
    eq(r.get("gone"), None, "PEXPIRE 0 deleted the key")
    # A TTL that passes (sleeping well past it; nothing here depends on how long the sleep was).
    r.set("short", "v")
    r.rpush("shortl", "a")
    eq(r.pexpire("short", 50), True, "PEXPIRE 50")
    eq(r.pexpire("shortl", 50), True, "PEXPIRE 50 on a list")
    time.sleep(0.2)
    eq(r.get("short"), None, "GET after the TTL passed")
    eq(r.exists("short"), 0, "EXISTS after the TTL passed")
    eq(r.ttl("short"), -2, "TTL after the TTL passed")
    eq(r.lrange("shortl", 0, -1), [], "LRANGE after the TTL passed")
    eq(r.type("shortl"), b"none", "TYPE after the TTL passed")
    check("short" not in [k.decode() for k in r.keys("*")], "KEYS skips expired keys")


def t_keys_patterns(p, r):
    r.flushdb()
    names = [b"hello", b"hallo", b"hxllo", b"hllo", b"heeeello", b"a*b", b"axb", b"a?b", b"\xff\x00bin"]
    for n in names:
        r.set(n, "1")

    def keys(pattern):
        return sorted(r.keys(pattern))

    eq(keys("*"), sorted(names), "KEYS *")
    eq(keys("h?llo"), sorted([b"hello", b"hallo", b"hxllo"]), "KEYS h?llo")
    eq(keys("h*llo"), sorted([b"hello", b"hallo", b"hxllo", b"hllo", b"heeeello"]), "KEYS h*llo")
    eq(keys("h[ae]llo"), sorted([b"hello", b"hallo"]), "KEYS h[ae]llo")
    eq(keys("h[^e]llo"), sorted([b"hallo", b"hxllo"]), "KEYS h[^e]llo")
    eq(keys("h[a-b]llo"), [b"hallo"], "KEYS h[a-b]llo")
    eq(keys(r"a\*b"), [b"a*b"], r"KEYS a\*b")
    eq(keys(r"a\?b"), [b"a?b"], r"KEYS a\?b")
    eq(keys("a?b"), sorted([b"a*b", b"axb", b"a?b"]), "KEYS a?b")
    eq(keys(b"\xff*"), [b"\xff\x00bin"], "KEYS binary prefix")
    eq(keys("nomatch*"), [], "KEYS no match")
    fails("KEYS arity", lambda: raw(r, "KEYS"), "wrong number of arguments for 'keys' command")


def t_scan(p, r):
    r.flushdb()
    want = {f"scan:{i}".encode() for i in range(1000)}
    other = {f"other:{i}".encode() for i in range(100)}
    lists = {f"list:{i}".encode() for i in range(20)}
    pipe = r.pipeline(transaction=False)
    for k in want | other:
        pipe.set(k, "v")
    for k in lists:
        pipe.rpush(k, "v")
    pipe.execute()

    def collect(**kw):
        seen = set()
        cursor, calls = 0, 0
        while True:
            cursor, keys = r.scan(cursor, **kw)
            seen.update(keys)
            calls += 1
            check(calls < 100000, f"SCAN {kw} did not finish")  # a loop guard, not a measure
            if cursor == 0:
                return seen

    eq(collect(), want | other | lists, "SCAN (default COUNT) returns every key")
    eq(collect(count=7), want | other | lists, "SCAN COUNT 7 returns every key")
    eq(collect(count=1000000), want | other | lists, "SCAN COUNT 1000000 returns every key")
    eq(collect(match="scan:*", count=10), want, "SCAN MATCH scan:*")
    eq(collect(match="list:*", _type="list"), lists, "SCAN MATCH TYPE list")
    eq(collect(_type="list"), lists, "SCAN TYPE list")
    eq(collect(_type="string", count=50), want | other, "SCAN TYPE string")
    eq(collect(match="nomatch*"), set(), "SCAN MATCH nothing")
    eq(set(r.scan_iter(count=13)), want | other | lists, "redis-py scan_iter")
    fails("SCAN abc", lambda: raw(r, "SCAN", "abc"), "invalid cursor")
    fails("SCAN COUNT 0", lambda: raw(r, "SCAN", "0", "COUNT", "0"), "syntax error")
    fails("SCAN bad option", lambda: raw(r, "SCAN", "0", "FOO"), "syntax error")
    nan = "value is not an integer or out of range"
    fails("SCAN COUNT abc", lambda: raw(r, "SCAN", "0", "COUNT", "abc"), nan)
    r.flushdb()
    eq(r.scan(0), (0, []), "SCAN on an empty db")


# ---------------------------------------------------------------------------------------------
# Lists


def t_lists(p, r):
    eq(r.rpush("l", "b", "c"), 2, "RPUSH")
    eq(r.lpush("l", "a", "z"), 4, "LPUSH (each to the head)")
    eq(r.lrange("l", 0, -1), [b"z", b"a", b"b", b"c"], "LRANGE all")
    eq(r.lrange("l", 1, 2), [b"a", b"b"], "LRANGE 1 2")
    eq(r.lrange("l", -2, -1), [b"b", b"c"], "LRANGE -2 -1")
    eq(r.lrange("l", -100, 100), [b"z", b"a", b"b", b"c"], "LRANGE clamps")
    eq(r.lrange("l", 3, 1), [], "LRANGE start > stop")
    eq(r.lrange("l", 10, 20), [], "LRANGE past the end")
    eq(r.lrange("nolist", 0, -1), [], "LRANGE missing")
    eq(r.llen("l"), 4, "LLEN")
    eq(r.llen("nolist"), 0, "LLEN missing")
    eq(r.lindex("l", 0), b"z", "LINDEX 0")
    eq(r.lindex("l", -1), b"c", "LINDEX -1")
    eq(r.lindex("l", 4), None, "LINDEX out of range")
    eq(r.lindex("l", -5), None, "LINDEX negative out of range")
    eq(r.lindex("nolist", 0), None, "LINDEX missing")
    eq(r.lset("l", 1, "A"), True, "LSET")
    eq(r.lset("l", -1, "C"), True, "LSET -1")
    eq(r.lrange("l", 0, -1), [b"z", b"A", b"b", b"C"], "after LSET")
    fails("LSET out of range", lambda: r.lset("l", 4, "x"), "index out of range")
    fails("LSET missing", lambda: r.lset("nolist", 0, "x"), "no such key")
    eq(r.lpop("l"), b"z", "LPOP")
    eq(r.rpop("l"), b"C", "RPOP")
    eq(r.lpop("l", 0), [], "LPOP 0")
    eq(r.rpush("l", "d", "e", "f"), 5, "RPUSH more")
    eq(r.lpop("l", 2), [b"A", b"b"], "LPOP 2")
    eq(r.rpop("l", 2), [b"f", b"e"], "RPOP 2 (tail first)")
    eq(r.rpop("l", 10), [b"d"], "RPOP more than there are")
    eq(r.exists("l"), 0, "an emptied list is deleted")
    eq(r.lpop("l"), None, "LPOP missing")
    eq(r.rpop("l"), None, "RPOP missing")
    eq(r.lpop("l", 3), None, "LPOP count missing (null array)")
    eq(r.rpop("l", 3), None, "RPOP count missing (null array)")
    fails("LPOP -1", lambda: raw(r, "LPOP", "l", "-1"), "value is out of range, must be positive")
    fails("RPOP abc", lambda: raw(r, "RPOP", "l", "abc"), "value is out of range, must be positive")
    fails("LPOP arity", lambda: raw(r, "LPOP", "l", "1", "2"), "wrong number of arguments for 'lpop' command")
    r.rpush("t", *[str(i) for i in range(10)])
    eq(r.ltrim("t", 2, -3), True, "LTRIM")
    eq(r.lrange("t", 0, -1), [str(i).encode() for i in range(2, 8)], "after LTRIM")
    eq(r.ltrim("t", -100, 100), True, "LTRIM clamps")
    eq(r.llen("t"), 6, "LTRIM clamps: nothing removed")
    eq(r.ltrim("t", 5, 1), True, "LTRIM empty range")
    eq(r.exists("t"), 0, "LTRIM to nothing deletes the list")
    eq(r.ltrim("nolist", 0, 1), True, "LTRIM missing")
    r.rpush("l", "a")
    fails("LRANGE abc", lambda: raw(r, "LRANGE", "l", "a", "b"), "value is not an integer or out of range")
    fails("LINDEX abc", lambda: raw(r, "LINDEX", "l", "a"), "value is not an integer or out of range")
    fails("LTRIM abc", lambda: raw(r, "LTRIM", "l", "a", "1"), "value is not an integer or out of range")
    fails("LSET abc", lambda: raw(r, "LSET", "l", "a", "x"), "value is not an integer or out of range")
    fails("LPUSH arity", lambda: raw(r, "LPUSH", "l"), "wrong number of arguments for 'lpush' command")
    fails("RPUSH arity", lambda: raw(r, "RPUSH", "l"), "wrong number of arguments for 'rpush' command")
    arity = "wrong number of arguments for 'lrange' command"
    fails("LRANGE arity", lambda: raw(r, "LRANGE", "l", "0"), arity)
    # Large elements (around the zero-copy threshold and the read buffer) in one list.
    rng = random.Random(7)
    elems = [bytes(rng.getrandbits(8) for _ in range(n)) for n in (0, 1, 511, 512, 513, 4096, 17000)]
    eq(r.rpush("big", *elems), len(elems), "RPUSH large elements")
    eq(r.lrange("big", 0, -1), elems, "LRANGE large elements")
    eq(r.lindex("big", 5), elems[5], "LINDEX a large element")
    eq(r.lset("big", 2, elems[6]), True, "LSET a large element")
    eq(r.lpop("big", 3), [elems[0], elems[1], elems[6]], "LPOP large elements")


def t_hashes(p, r):
    eq(r.hset("h", mapping={"a": "1", "b": "2"}), 2, "HSET two fields")
    eq(r.hset("h", "a", "3"), 0, "HSET an existing field")
    eq(r.hget("h", "a"), b"3", "HGET")
    eq(r.hmget("h", ["a", "zz", "b"]), [b"3", None, b"2"], "HMGET")
    eq(r.hgetall("h"), {b"a": b"3", b"b": b"2"}, "HGETALL")
    eq(sorted(r.hkeys("h")), [b"a", b"b"], "HKEYS")
    eq(sorted(r.hvals("h")), [b"2", b"3"], "HVALS")
    eq(r.hincrby("h", "a", 4), 7, "HINCRBY")
    eq(r.hincrbyfloat("h", "f", 1.5), 1.5, "HINCRBYFLOAT")
    eq(r.hlen("h"), 3, "HLEN")
    eq(r.hstrlen("h", "a"), 1, "HSTRLEN")
    eq(r.hexists("h", "b"), True, "HEXISTS")
    eq(r.hsetnx("h", "b", "x"), False, "HSETNX on an existing field")
    eq(dict(r.hscan_iter("h", match="[ab]")), {b"a": b"7", b"b": b"2"}, "HSCAN")
    eq(r.hrandfield("h", -5).__len__(), 5, "HRANDFIELD -5")
    fails("HINCRBY not an integer", lambda: r.hincrby("h", "f", 1), "hash value is not an integer")
    eq(r.hdel("h", "a", "b", "f", "zz"), 3, "HDEL")
    eq(r.exists("h"), 0, "an emptied hash is deleted")
    big = bytes(random.Random(3).getrandbits(8) for _ in range(17000))
    eq(r.hset("bigh", big, big), 1, "HSET a large field and value")
    eq(r.hgetall("bigh"), {big: big}, "HGETALL a large field and value")


def t_sets(p, r):
    eq(r.sadd("s", "a", "b", "c", "a"), 3, "SADD")
    eq(r.sadd("t", "b", "c", "d"), 3, "SADD another")
    eq(r.smembers("s"), {b"a", b"b", b"c"}, "SMEMBERS")
    eq(r.sismember("s", "a"), True, "SISMEMBER")
    eq(r.smismember("s", ["a", "z"]), [1, 0], "SMISMEMBER")
    eq(r.scard("s"), 3, "SCARD")
    eq(r.sinter("s", "t"), {b"b", b"c"}, "SINTER")
    eq(r.sunion("s", "t"), {b"a", b"b", b"c", b"d"}, "SUNION")
    eq(r.sdiff("s", "t"), {b"a"}, "SDIFF")
    eq(r.sintercard(2, ["s", "t"], limit=1), 1, "SINTERCARD LIMIT")
    eq(r.sinterstore("u", "s", "t"), 2, "SINTERSTORE")
    eq(r.smove("s", "t", "a"), True, "SMOVE")
    eq(set(r.sscan_iter("t")), {b"a", b"b", b"c", b"d"}, "SSCAN")
    eq(len(r.srandmember("t", 3)), 3, "SRANDMEMBER 3")
    eq(len(r.spop("t", 2)), 2, "SPOP 2")
    eq(r.scard("t"), 2, "SPOP removes")
    eq(r.srem("u", "b", "c"), 2, "SREM")
    eq(r.exists("u"), 0, "an emptied set is deleted")
    r.set("str2", "v")
    fails("SADD on a string", lambda: r.sadd("str2", "x"), "WRONGTYPE Operation against a key holding the wrong kind of value")


def t_zsets(p, r):
    eq(r.zadd("z", {"a": 1, "b": 2.5, "c": -1}), 3, "ZADD")
    eq(r.zadd("z", {"a": 5}, xx=True, ch=True), 1, "ZADD XX CH")
    eq(r.zscore("z", "b"), 2.5, "ZSCORE")
    eq(r.zincrby("z", 0.5, "b"), 3.0, "ZINCRBY")
    pairs = lambda v: [tuple(x) for x in v]  # RESP3 gives lists, RESP2 tuples
    eq(pairs(r.zrange("z", 0, -1, withscores=True)), [(b"c", -1.0), (b"b", 3.0), (b"a", 5.0)], "ZRANGE WITHSCORES")
    eq(r.zrange("z", "(0", "+inf", byscore=True), [b"b", b"a"], "ZRANGE BYSCORE")
    eq(r.zrank("z", "a"), 2, "ZRANK")
    eq(r.zcount("z", "-inf", 3), 2, "ZCOUNT")
    eq(pairs(r.zpopmin("z", 1)), [(b"c", -1.0)], "ZPOPMIN 1")
    eq(r.zrangestore("z2", "z", 0, 0), 1, "ZRANGESTORE")
    eq(dict(r.zscan_iter("z")), {b"b": 3.0, b"a": 5.0}, "ZSCAN")
    r.sadd("s", "a")
    eq(pairs(r.zunion(["z", "s"], withscores=True)), [(b"b", 3.0), (b"a", 6.0)], "ZUNION with a plain set")
    eq(pairs(r.zinter({"z": 2, "z2": 1}, aggregate="MIN", withscores=True)), [(b"b", 3.0)], "ZINTER WEIGHTS AGGREGATE")
    eq(r.zdiff(["z", "z2"]), [b"a"], "ZDIFF")
    eq(r.zunionstore("z3", {"z": -1}), 2, "ZUNIONSTORE WEIGHTS")
    eq(r.zintercard(2, ["z", "z2"], limit=1), 1, "ZINTERCARD LIMIT")
    eq(pairs(r.zrangebyscore("z", "-inf", "+inf", start=1, num=1, withscores=True)), [(b"a", 5.0)], "ZRANGEBYSCORE LIMIT")
    eq(r.zrevrange("z", 0, -1), [b"a", b"b"], "ZREVRANGE")
    eq(r.zrem("z", "a", "b"), 2, "ZREM")
    eq(r.exists("z"), 0, "an emptied sorted set is deleted")
    fails("ZADD NX XX", lambda: r.zadd("z", {"a": 1}, nx=True, xx=True), "ZADD allows either 'nx' or 'xx', not both", redis.DataError)


def t_wrongtype(p, r):
    r.set("str", "v")
    r.rpush("lst", "v")
    wt = "WRONGTYPE Operation against a key holding the wrong kind of value"
    for what, fn in [
        ("GET list", lambda: r.get("lst")),
        ("GETSET list", lambda: r.getset("lst", "x")),
        ("GETDEL list", lambda: r.getdel("lst")),
        ("SET GET list", lambda: r.set("lst", "x", get=True)),
        ("APPEND list", lambda: r.append("lst", "x")),
        ("STRLEN list", lambda: r.strlen("lst")),
        ("INCR list", lambda: r.incr("lst")),
        ("DECRBY list", lambda: r.decrby("lst", 2)),
        ("LPUSH string", lambda: r.lpush("str", "x")),
        ("RPUSH string", lambda: r.rpush("str", "x")),
        ("LPOP string", lambda: r.lpop("str")),
        ("RPOP string", lambda: r.rpop("str", 2)),
        ("LRANGE string", lambda: r.lrange("str", 0, -1)),
        ("LLEN string", lambda: r.llen("str")),
        ("LINDEX string", lambda: r.lindex("str", 0)),
        ("LSET string", lambda: r.lset("str", 0, "x")),
        ("LTRIM string", lambda: r.ltrim("str", 0, 1)),
    ]:
        fails(f"WRONGTYPE {what}", fn, wt)
    eq(r.get("str"), b"v", "string intact")
    eq(r.lrange("lst", 0, -1), [b"v"], "list intact")
    eq(r.set("lst", "now a string"), True, "SET overwrites a list")
    eq(r.type("lst"), b"string", "TYPE after SET over a list")
    eq(r.setnx("str", "x"), False, "SETNX ignores the type")


def t_unknown_command(p, r):
    fails(
        "unknown command",
        lambda: raw(r, "FOO", "a", "b"),
        "unknown command 'FOO', with args beginning with: 'a' 'b' ",
    )
    unknown = "unknown command 'NOSUCH', with args beginning with: "
    fails("unknown command, no args", lambda: raw(r, "NOSUCH"), unknown)
    fails(
        "not in Ferry's table (XADD)",
        lambda: raw(r, "XADD", "h", "f", "v") if p.args.server == "ferry" else raw(r, "XYZZY", "h", "f", "v"),
        "unknown command 'XADD', with args beginning with: 'h' 'f' 'v' "
        if p.args.server == "ferry"
        else "unknown command 'XYZZY', with args beginning with: 'h' 'f' 'v' ",
    )
    eq(r.execute_command("gEt", "nokey"), None, "command names in any case")


# ---------------------------------------------------------------------------------------------
# Values: binary, large, around the thresholds


def t_binary(p, r):
    every = bytes(range(256))
    eq(r.set("bin", every), True, "SET all 256 byte values")
    eq(r.get("bin"), every, "GET all 256 byte values")
    eq(r.strlen("bin"), 256, "STRLEN binary")
    eq(r.set(every, "as a key"), True, "SET with a binary key")
    eq(r.get(every), b"as a key", "GET with a binary key")
    eq(every in r.keys("*"), True, "KEYS returns the binary key")
    for b in range(256):
        r.set(b"one", bytes([b]))
        eq(r.get(b"one"), bytes([b]), f"single byte {b:#04x}")
    eq(r.rpush("binl", every, b"\r\n", b"\x00"), 3, "RPUSH binary")
    eq(r.lrange("binl", 0, -1), [every, b"\r\n", b"\x00"], "LRANGE binary")
    eq(r.echo(every), every, "ECHO binary")


def t_large(p, r):
    rng = random.Random(1)
    sizes = [0, 1, 511, 512, 513, 4095, 4096, 4097, 16383, 16384, 16385, 65536, 1 << 20]
    values = {n: rng.randbytes(n) for n in sizes}
    for n, v in values.items():
        eq(r.set(f"v{n}", v), True, f"SET {n} bytes")
    for n, v in values.items():
        eq(r.get(f"v{n}"), v, f"GET {n} bytes")
        eq(r.strlen(f"v{n}"), n, f"STRLEN {n} bytes")
    eq(r.mget([f"v{n}" for n in sizes]), [values[n] for n in sizes], "MGET every size in one reply")
    eq(r.getset("v4096", values[512]), values[4096], "GETSET large")
    eq(r.getdel("v4096"), values[512], "GETDEL large")
    eq(r.append("v513", values[4095]), 513 + 4095, "APPEND large")
    eq(r.get("v513"), values[513] + values[4095], "APPEND large value")
    eq(r.set(f"v{1 << 20}", values[511], get=True), values[1 << 20], "SET GET returns the 1 MiB value")
    eq(r.get(f"v{1 << 20}"), values[511], "overwritten 1 MiB value")
    # Overwriting while the old value may still be in flight (one pipeline, one round trip).
    a, b = rng.randbytes(70000), rng.randbytes(70000)
    pipe = r.pipeline(transaction=False)
    pipe.set("ow", a).get("ow").set("ow", b).get("ow").delete("ow").get("ow").set("ow", a).getdel("ow")
    eq(pipe.execute(), [True, a, True, b, 1, None, True, a], "overwrite and delete in one pipeline")


def t_pipelines(p, r):
    r.set("ps", "1")
    pipe = r.pipeline(transaction=False)
    pipe.set("pa", "x")
    pipe.get("pa")
    pipe.incr("ps")
    pipe.lpush("pl", "a", "b")
    pipe.lpush("pa", "oops")  # WRONGTYPE in the middle
    pipe.lrange("pl", 0, -1)
    pipe.execute_command("NOSUCHCMD")
    pipe.get("nokey")
    pipe.mget("pa", "ps", "nokey")
    pipe.expire("pa", 100)
    pipe.ttl("pa")
    pipe.delete("pa", "pl")
    pipe.dbsize()
    got = pipe.execute(raise_on_error=False)
    eq(len(got), 13, "pipeline reply count")
    eq(got[:4], [True, b"x", 2, 2], "pipeline replies 0-3")
    is_wrongtype = isinstance(got[4], redis.ResponseError) and str(got[4]).startswith("WRONGTYPE")
    check(is_wrongtype, f"reply 4: {got[4]!r}")
    eq(got[5], [b"b", b"a"], "pipeline reply 5")
    check(
        isinstance(got[6], redis.ResponseError) and str(got[6]).startswith("unknown command 'NOSUCHCMD'"),
        f"reply 6: {got[6]!r}",
    )
    eq(got[7:9], [None, [b"x", b"2", None]], "pipeline replies 7-8")
    eq(got[9], True, "pipeline EXPIRE")
    check(0 < got[10] <= 100, f"pipeline TTL: {got[10]}")
    eq(got[11:], [2, 1], "pipeline replies 11-12")
    # Many replies around the threshold in one batch.
    rng = random.Random(3)
    vals = [rng.randbytes(rng.choice([10, 511, 512, 513, 4095, 4096, 4097])) for _ in range(500)]
    pipe = r.pipeline(transaction=False)
    for i, v in enumerate(vals):
        pipe.set(f"pv{i}", v)
    for i in range(len(vals)):
        pipe.get(f"pv{i}")
    for i in range(len(vals)):
        pipe.rpush("pvl", vals[i])
    pipe.lrange("pvl", 0, -1)
    got = pipe.execute()
    eq(got[: len(vals)], [True] * len(vals), "pipelined SETs")
    eq(got[len(vals) : 2 * len(vals)], vals, "pipelined GETs")
    eq(got[2 * len(vals) : 3 * len(vals)], list(range(1, len(vals) + 1)), "pipelined RPUSHes")
    eq(got[-1], vals, "LRANGE of 500 values")
    # Inline commands are Redis protocol too (what telnet and redis-benchmark's PING_INLINE send).
    conn = r.connection_pool.get_connection()
    try:
        conn.send_packed_command([b"PING\r\nSET inl 'a b'\r\nGET inl\r\nECHO \"x\\x41\\n\"\r\n"])
        eq(conn.read_response(), b"PONG", "inline PING")
        eq(conn.read_response(), b"OK", "inline SET with quotes")
        eq(conn.read_response(), b"a b", "inline GET")
        eq(conn.read_response(), b"xA\n", "inline ECHO with escapes")
    finally:
        r.connection_pool.release(conn)


# ---------------------------------------------------------------------------------------------
# Authentication (a second server, started with a password)


def wait_for(what, cond, limit=SOCKET_TIMEOUT):
    """Polls `cond` until it holds; fails naming `what` after `limit` seconds."""
    deadline = time.monotonic() + limit
    while not cond():
        check(time.monotonic() < deadline, f"waited {limit} s for {what}")
        time.sleep(0.001)


def t_pubsub(p, r):
    sub = p.client()
    ps = sub.pubsub()
    ps.subscribe("news")
    ps.psubscribe("n*s")
    for kind, name in (("subscribe", b"news"), ("psubscribe", b"n*s")):
        m = ps.get_message(timeout=SOCKET_TIMEOUT)
        eq((m["type"], m["channel"]), (kind, name), "redis-py subscription notice")
    eq(r.publish("news", b"\x00hi"), 2, "PUBLISH receivers")
    m = ps.get_message(timeout=SOCKET_TIMEOUT)
    eq((m["type"], m["channel"], m["data"]), ("message", b"news", b"\x00hi"), "redis-py message")
    m = ps.get_message(timeout=SOCKET_TIMEOUT)
    eq((m["type"], m["pattern"], m["data"]), ("pmessage", b"n*s", b"\x00hi"), "redis-py pmessage")
    eq(r.pubsub_numsub("news"), [(b"news", 1)], "PUBSUB NUMSUB")
    eq(r.pubsub_numpat(), 1, "PUBSUB NUMPAT")
    big = bytes(range(256)) * 4096
    eq(r.publish("news", big), 2, "PUBLISH of 1 MiB")
    for _ in range(2):
        eq(ps.get_message(timeout=SOCKET_TIMEOUT)["data"], big, "1 MiB message")
    ps.unsubscribe()
    ps.punsubscribe()
    wait_for("the subscriptions to go", lambda: r.pubsub_numsub("news") == [(b"news", 0)])
    ps.close()
    sub.close()


def t_blocking(p, r):
    waiter = p.client()
    got = {}
    t = threading.Thread(target=lambda: got.update(v=waiter.blpop(["q1", "q2"], timeout=30)))
    t.start()
    wait_for("BLPOP to block", lambda: r.info("clients")["blocked_clients"] == 1)
    eq(r.rpush("q2", "a", "b"), 2, "RPUSH to a waited-on list")
    t.join(SOCKET_TIMEOUT)
    check(not t.is_alive(), "BLPOP was not served")
    eq(list(got["v"]), [b"q2", b"a"], "BLPOP served")
    eq(waiter.brpop("nothing", timeout=0.01), None, "BRPOP timeout")
    r.zadd("z", {"m": 1.5})
    eq(list(waiter.bzpopmin("z", timeout=1)), [b"z", b"m", 1.5], "BZPOPMIN with data")
    eq(waiter.blmove("q2", "d", 1, "LEFT", "RIGHT"), b"b", "BLMOVE with data")
    waiter.close()


def t_auth(p, r):
    if not p.args.auth_port:
        raise Mismatch("--auth-port is required")
    pw = p.args.password
    if p.protocol == 3:
        # A RESP3 client without a password sends HELLO 3 on connecting: refused.
        fails(
            "RESP3 connect without AUTH",
            lambda: p.client(port=p.args.auth_port).ping(),
            "HELLO must be called with the client already authenticated, otherwise the HELLO AUTH "
            "<user> <pass> option can be used to authenticate the client and select the RESP "
            "protocol version at the same time",
            redis.AuthenticationError,
        )
    # redis-py's own handshake without a password: its CLIENT SETINFO gets NOAUTH (Redis 7.2+,
    # where SETINFO exists; 7.0 rejects the subcommand instead and the PING gets it): either
    # way an AuthenticationError.
    fails(
        "redis-py without a password",
        p.client(port=p.args.auth_port, protocol=2).ping,
        "Authentication required.",
        redis.AuthenticationError,
    )
    # Connections that send nothing on connecting (driver_info=None: no CLIENT SETINFO), to see
    # what the server answers before AUTH.
    a = p.client(port=p.args.auth_port, protocol=2, driver_info=None)
    fails("PING before AUTH", a.ping, "Authentication required.", redis.AuthenticationError)
    fails("GET before AUTH", lambda: a.get("k"), "Authentication required.", redis.AuthenticationError)
    # Redis checks the command and its arity before authentication.
    fails(
        "unknown command before AUTH",
        lambda: raw(a, "FOO", "x"),
        "unknown command 'FOO', with args beginning with: 'x' ",
    )
    fails("wrong arity before AUTH", lambda: raw(a, "GET"), "wrong number of arguments for 'get' command")
    fails(
        "AUTH wrong password",
        lambda: raw(a, "AUTH", "wrong"),
        "invalid username-password pair or user is disabled.",
        redis.AuthenticationError,
    )
    fails(
        "AUTH wrong user",
        lambda: raw(a, "AUTH", "nobody", pw),
        "invalid username-password pair or user is disabled.",
        redis.AuthenticationError,
    )
    fails("AUTH 3 args", lambda: raw(a, "AUTH", "a", "b", "c"), "syntax error")
    fails("still refused", a.ping, "Authentication required.", redis.AuthenticationError)
    eq(raw(a, "AUTH", pw), b"OK", "AUTH password")
    eq(a.set("k", "v"), True, "SET after AUTH")
    eq(a.get("k"), b"v", "GET after AUTH")
    b = p.client(port=p.args.auth_port, protocol=2, driver_info=None)
    eq(raw(b, "AUTH", "default", pw), b"OK", "AUTH default password")
    eq(b.get("k"), b"v", "GET after AUTH default")
    # HELLO ... AUTH: authenticates and switches protocol in one command (on a fresh connection).
    c = p.client(port=p.args.auth_port, protocol=2, driver_info=None)
    fails(
        "HELLO 2 before AUTH",
        lambda: raw(c, "HELLO", 2),
        "HELLO must be called with the client already authenticated, otherwise the HELLO AUTH "
        "<user> <pass> option can be used to authenticate the client and select the RESP "
        "protocol version at the same time",
        redis.AuthenticationError,
    )
    fails(
        "HELLO AUTH wrong",
        lambda: raw(c, "HELLO", 2, "AUTH", "default", "wrong"),
        "invalid username-password pair or user is disabled.",
        redis.AuthenticationError,
    )
    h = raw(c, "HELLO", 2, "AUTH", "default", pw)
    eq(dict(zip(h[::2], h[1::2]))[b"proto"], 2, "HELLO 2 AUTH")
    eq(c.get("k"), b"v", "GET after HELLO AUTH")
    # redis-py's own login: AUTH (RESP2) or HELLO 3 AUTH (RESP3).
    d = p.client(port=p.args.auth_port, password=pw)
    eq(d.get("k"), b"v", f"redis-py password= on RESP{p.protocol}")
    e = p.client(port=p.args.auth_port, username="default", password=pw)
    eq(e.get("k"), b"v", "redis-py username=default password=")
    f = p.client(port=p.args.auth_port, password="wrong")
    wrongpass = "invalid username-password pair or user is disabled."
    fails("redis-py wrong password", f.ping, wrongpass, redis.AuthenticationError)
    for x in (a, b, c, d, e, f):
        x.close()


TESTS = [
    t_parser_in_use,
    t_ping_echo,
    t_hello,
    t_auth_without_password,
    t_select,
    t_transactions,
    t_quit,
    t_client,
    t_command,
    t_config_get,
    t_info_dbsize_flush,
    t_get_set,
    t_multi_key_strings,
    t_counters,
    t_del_exists_type,
    t_expiry,
    t_keys_patterns,
    t_scan,
    t_lists,
    t_hashes,
    t_sets,
    t_zsets,
    t_wrongtype,
    t_unknown_command,
    t_binary,
    t_large,
    t_pipelines,
    t_pubsub,
    t_blocking,
    t_auth,
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True, help="a server without a password")
    ap.add_argument("--auth-port", type=int, help="a server started with a password")
    ap.add_argument("--password", default="s3cret", help="the --auth-port server's password")
    ap.add_argument("--server", choices=["ferry", "redis"], default="ferry", help="whose behaviour to expect")
    ap.add_argument("--ferry-commands", type=int, default=46, help="commands in Ferry's table")
    ap.add_argument("--keep-going", action="store_true", help="run every group, report every failure")
    args = ap.parse_args()
    check(HIREDIS_AVAILABLE, "redis-py does not see hiredis (HIREDIS_AVAILABLE is false)")
    checks, failed = 0, 0
    for protocol in (2, 3):
        for pure in (False, True):
            p = Pass(args, protocol, pure)
            for t in TESTS:
                r = p.client()
                try:
                    r.flushall()
                    t(p, r)
                    checks += 1
                except Exception as e:
                    print(f"redis_py.py FAILED [{p.name}] {t.__name__}: {e}", file=sys.stderr)
                    if not isinstance(e, Mismatch):
                        traceback.print_exc()
                    if not args.keep_going:
                        sys.exit(1)
                    failed += 1
                finally:
                    r.close()
            print(f"redis_py.py: {p.name}: done", flush=True)
    if failed:
        print(f"redis_py.py: {failed} check groups FAILED, {checks} passed", file=sys.stderr)
        sys.exit(1)
    print(f"redis_py.py: all {checks} check groups passed against {args.server}")


if __name__ == "__main__":
    main()
