"""Type stubs of the package `ferry` (the extension module `ferry._ferry`)."""

from os import PathLike
from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union, overload

_Path = Union[str, PathLike[str]]
_Bytes = Union[bytes, bytearray, memoryview]

class Error(Exception):
    """Every error Ferry raises."""

class SchemaError(Error):
    """The .proto files do not load, or name no such message."""

class DecodeError(Error):
    """Bytes that are not a valid message."""

    kind: str
    """The Rust `DecodeErrorKind`'s variant, e.g. `RangeOutOfBounds`."""
    offset: int
    """Byte offset from the message start of the header, entry or range at fault."""
    path: list[str]
    """The fields from the root down, as `package.Message.field`."""

class EncodeError(Error):
    """A value that does not fit its field, or JSON that does not fit the message."""

    path: list[str]
    """Where: field names and `[index]` segments, outermost first (empty for the message)."""

class RpcError(Error):
    """A call that failed with a status."""

    code: int
    """gRPC's number of the status code."""
    code_name: str
    """`NOT_FOUND`, `DEADLINE_EXCEEDED`, ..."""
    details: str
    """The status message."""

class Schema:
    """`.proto` files parsed at run time (no `protoc`)."""

    @staticmethod
    def load(paths: Sequence[_Path], includes: Sequence[_Path] = ...) -> Schema: ...
    def message(self, name: str) -> MessageType: ...
    def messages(self) -> list[str]: ...

Field = Tuple[str, int, str, str, Optional[str], Optional[str]]
"""`(name, number, kind, label, message, oneof)`."""

class MessageType:
    """One message of a schema."""

    @property
    def name(self) -> str: ...
    @property
    def fields(self) -> list[Field]: ...
    @overload
    def encode(self, message: Union[Mapping[str, Any], View], /) -> bytes: ...
    @overload
    def encode(self, **fields: Any) -> bytes: ...
    def decode(
        self,
        data: bytes,
        *,
        max_message_len: Optional[int] = None,
        max_depth: Optional[int] = None,
        max_elements: Optional[int] = None,
    ) -> View: ...
    def from_json(self, text: str) -> View: ...
    def to_json(self, view: View) -> str: ...

class View:
    """A validated message read in place; fields are attributes and items."""

    @property
    def message_type(self) -> str: ...
    def __getattr__(self, name: str) -> Any: ...
    def __getitem__(self, name: str) -> Any: ...
    def HasField(self, name: str) -> bool: ...
    def to_dict(self) -> dict[str, Any]: ...

class Channel:
    """A connection to a Ferry RPC server: `tcp://HOST:PORT`, `shm:///PATH`, `udp://HOST:PORT`
    or `xdp://IFNAME/QUEUE@IP:PORT`."""

    def __init__(self, addr: str) -> None: ...
    @overload
    def call(
        self,
        method: str,
        request: bytes,
        *,
        response: None = None,
        timeout: Optional[float] = None,
        metadata: Optional[Iterable[Tuple[str, _Bytes]]] = None,
    ) -> bytes: ...
    @overload
    def call(
        self,
        method: str,
        request: bytes,
        *,
        response: MessageType,
        timeout: Optional[float] = None,
        metadata: Optional[Iterable[Tuple[str, _Bytes]]] = None,
    ) -> View: ...
