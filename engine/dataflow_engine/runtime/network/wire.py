"""Length-prefixed messages over TCP, between the slots of a pipelined job (frames and
events, Flink's NettyMessage) and between each slot and the driver (pickled objects).

A data message is a fixed header and the frame's bytes as the RecordWriter encoded them, so a
batch crosses the network without being decoded or re-encoded on the way. Every connection
starts with the run's token, and nothing is unpickled before it matched.
"""

from __future__ import annotations

import hmac
import pickle
import socket
import struct
from enum import IntEnum
from typing import Any

#: kind, checkpoint id, payload length.
_HEADER = struct.Struct(">BqI")
_LENGTH = struct.Struct(">I")


class MessageKind(IntEnum):
    #: A frame of records (and watermarks) for the receiving subtask.
    DATA = 0
    #: Flink's CheckpointBarrier: everything before it belongs to the checkpoint.
    BARRIER = 1
    #: Flink's EndOfPartitionEvent: the producer subtask finished.
    END_OF_PARTITION = 2


def send_message(sock: socket.socket, kind: MessageKind, checkpoint_id: int = 0,
                 payload: bytes = b"") -> None:
    sock.sendall(_HEADER.pack(kind, checkpoint_id, len(payload)) + payload)


def receive_message(sock: socket.socket) -> tuple[MessageKind, int, bytes] | None:
    """The next message, or None when the sender closed the connection between two."""
    header = _receive(sock, _HEADER.size, eof_ok=True)
    if header is None:
        return None
    kind, checkpoint_id, length = _HEADER.unpack(header)
    payload = _receive(sock, length) if length else b""
    assert payload is not None
    return MessageKind(kind), checkpoint_id, payload


def send_token(sock: socket.socket, token: str) -> None:
    """A connection's first bytes: the run's token, so that its peer unpickles nothing from
    a connection that does not come from the same run."""
    sock.sendall(token.encode("ascii"))


def token_matches(sock: socket.socket, token: str) -> bool:
    expected = token.encode("ascii")
    try:
        received = _receive(sock, len(expected))
    except (OSError, EOFError):
        return False
    return received is not None and hmac.compare_digest(received, expected)


def send_object(sock: socket.socket, value: Any) -> None:
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    sock.sendall(_LENGTH.pack(len(data)) + data)


def receive_object(sock: socket.socket) -> Any:
    """The next pickled object; EOFError when the peer closed the connection."""
    header = _receive(sock, _LENGTH.size, eof_ok=True)
    if header is None:
        raise EOFError("the connection was closed")
    data = _receive(sock, _LENGTH.unpack(header)[0])
    assert data is not None
    return pickle.loads(data)


def _receive(sock: socket.socket, size: int, eof_ok: bool = False) -> bytes | None:
    view = bytearray(size)
    received = 0
    while received < size:
        count = sock.recv_into(memoryview(view)[received:])
        if not count:
            if eof_ok and received == 0:
                return None
            raise EOFError(f"the connection closed {received} bytes into a {size}-byte read")
        received += count
    return bytes(view)
