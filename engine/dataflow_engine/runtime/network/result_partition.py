"""Flink's ResultPartition for a pipelined subtask: where each of its frames goes.

A RecordWriter tags each frame with its consumer subtask (see
:mod:`~dataflow_engine.runtime.tasks.record_writer`); here each tag maps to the connection to
that subtask, in this slot (straight into its :class:`~.input_gate.InputGate`) or in another
(a TCP connection). Events (barriers, end of partition) go once over every connection.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Mapping
from typing import Protocol

from dataflow_engine.runtime.network.input_gate import InputGate
from dataflow_engine.runtime.network.wire import MessageKind, send_message

_unpack_long = struct.Struct(">q").unpack


class Connection(Protocol):
    def send(self, kind: MessageKind, checkpoint_id: int = 0, payload: bytes = b"") -> None: ...


class LocalConnection:
    """To a subtask in the same slot: its gate's queue (a blocking put is the backpressure)."""

    def __init__(self, gate: InputGate, index: int) -> None:
        self.gate, self.index = gate, index

    def send(self, kind: MessageKind, checkpoint_id: int = 0, payload: bytes = b"") -> None:
        self.gate.put(self.index, kind, checkpoint_id, payload)


class RemoteConnection:
    """To a subtask in another slot: a TCP connection of its own (the peer reads it only as
    fast as the consumer has credits, so TCP's window is the backpressure)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, kind: MessageKind, checkpoint_id: int = 0, payload: bytes = b"") -> None:
        send_message(self.sock, kind, checkpoint_id, payload)


class ResultPartition:
    def __init__(self, routes: Mapping[int, Connection]) -> None:
        #: Frame tag -> the connection to the subtask it is for.
        self.routes = dict(routes)
        self.connections = list({id(c): c for c in self.routes.values()}.values())

    def ship(self, frames: Iterable[bytes]) -> None:
        """``frames``: tag, batch, tag, batch... as RecordWriters append them."""
        iterator = iter(frames)
        routes = self.routes
        for tag in iterator:
            routes[_unpack_long(tag)[0]].send(MessageKind.DATA, 0, next(iterator))

    def broadcast(self, kind: MessageKind, checkpoint_id: int = 0) -> None:
        for connection in self.connections:
            connection.send(kind, checkpoint_id)
