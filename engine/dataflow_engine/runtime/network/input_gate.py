"""Flink's InputGate for a pipelined subtask: what its producer subtasks send, in one queue.

Each producer subtask reaches a consumer subtask over one connection (local: a call; remote: a
TCP connection read by its own thread), and each connection has a few credits (Flink's
credit-based flow control): a sender blocks once that many of its items wait unprocessed, so a
slow consumer holds back exactly the producers feeding it, and nothing else. During a
checkpoint's alignment the connections that delivered the barrier are *blocked*: their later
items wait aside, still holding their credits, until every connection delivered it.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from dataflow_engine.runtime.network.wire import MessageKind

#: Items a connection may have waiting at its consumer (Flink's buffers per channel).
DEFAULT_CREDITS = 8
#: Seconds between two looks of a blocked sender at whether the gate was closed.
_CLOSED_CHECK = 0.1


@dataclass(frozen=True, slots=True)
class BufferOrEvent:
    #: Index of the connection in the gate (see :attr:`InputGate.producers`); -1: control.
    connection: int
    kind: MessageKind | None
    checkpoint_id: int = 0
    payload: object = b""


class InputGate:
    def __init__(self, producers: Sequence[tuple[str, int]],
                 credits: int = DEFAULT_CREDITS) -> None:
        #: The producer subtasks ``(vertex id, subtask)`` sending to this one, one connection
        #: each.
        self.producers = tuple(producers)
        self.index = {producer: i for i, producer in enumerate(self.producers)}
        self._credits = [threading.Semaphore(credits) for _ in self.producers]
        self._queue: queue.SimpleQueue[BufferOrEvent] = queue.SimpleQueue()
        self._blocked: set[int] = set()
        self._held: collections.deque[BufferOrEvent] = collections.deque()
        self._ready: collections.deque[BufferOrEvent] = collections.deque()
        self.closed = False

    def put(self, connection: int, kind: MessageKind, checkpoint_id: int = 0,
            payload: bytes = b"") -> None:
        """A producer's item; blocks while the connection has no credit left, and gives up
        (dropping the item) if the gate is closed meanwhile."""
        credits = self._credits[connection]
        while not credits.acquire(timeout=_CLOSED_CHECK):
            if self.closed:
                return
        self._queue.put(BufferOrEvent(connection, kind, checkpoint_id, payload))

    def put_control(self, payload: object) -> None:
        """A message of the slot (a split, a barrier to inject, a cancel): never blocks."""
        self._queue.put(BufferOrEvent(-1, None, 0, payload))

    def take(self, timeout: float | None) -> BufferOrEvent | None:
        """The next item of an unblocked connection (or control), None after ``timeout``
        seconds without one (0: only what is there)."""
        while self._ready:
            item = self._ready.popleft()
            if item.connection not in self._blocked:
                return item
            self._held.append(item)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                if deadline is None:
                    item = self._queue.get()
                else:
                    item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if item.connection in self._blocked:
                self._held.append(item)
                continue
            return item

    def release(self, item: BufferOrEvent) -> None:
        """``item`` was processed: its connection gets its credit back."""
        if item.connection >= 0:
            self._credits[item.connection].release()

    def close(self) -> None:
        """The task is gone: senders blocked on credits give up, so that no thread of the
        slot is left waiting."""
        self.closed = True

    def block(self, connection: int) -> None:
        self._blocked.add(connection)

    def unblock_all(self) -> None:
        """Alignment ended: held items come next, in the order they arrived."""
        self._blocked.clear()
        self._ready.extend(self._held)
        self._held.clear()
