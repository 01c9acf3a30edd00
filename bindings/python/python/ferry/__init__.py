"""Ferry's wire format and RPC from Python.

Load ``.proto`` files at run time, encode dicts into Ferry messages, read received messages
in place through validated views (``bytes`` fields as memoryviews of the received buffer),
and call Ferry RPC servers over TCP or shared memory. The work is done by the Rust crates
(``ferry-wire``, ``ferry-reflect``, ``ferry-rpc``) through the extension module
``ferry._ferry``.

    >>> schema = ferry.Schema.load(["kv.proto"], includes=["."])
    >>> Put = schema.message("kv.Put")
    >>> view = Put.decode(Put.encode({"key": "k", "value": b"v"}))
    >>> view.key, bytes(view.value)
    ('k', b'v')
"""

from ferry._ferry import (
    Channel,
    DecodeError,
    EncodeError,
    Error,
    MessageType,
    RpcError,
    Schema,
    SchemaError,
    View,
)

__all__ = [
    "Channel",
    "DecodeError",
    "EncodeError",
    "Error",
    "MessageType",
    "RpcError",
    "Schema",
    "SchemaError",
    "View",
]
