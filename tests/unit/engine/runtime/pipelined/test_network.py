"""The pipelined network's parts: messages on the wire, an InputGate's credits and blocked
connections, a ResultPartition's routes, and barrier alignment (Flink's exactly-once
CheckpointBarrierHandler), each on its own."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

import pytest

from dataflow_engine.runtime.jobmaster.pipelined import ControlServer
from dataflow_engine.runtime.network.input_gate import InputGate
from dataflow_engine.runtime.network.result_partition import LocalConnection, ResultPartition
from dataflow_engine.runtime.network.wire import (
    MessageKind,
    receive_message,
    receive_object,
    send_message,
    send_object,
    send_token,
)
from dataflow_engine.runtime.taskmanager.barrier_alignment import BarrierAligner
from dataflow_engine.runtime.tasks.record_writer import pack_long

pytestmark = pytest.mark.unit

DATA, BARRIER, END = MessageKind.DATA, MessageKind.BARRIER, MessageKind.END_OF_PARTITION


def test_messages_and_objects_cross_a_connection_whole_and_end_with_it() -> None:
    left, right = socket.socketpair()
    big = bytes(range(256)) * 4000  # more than the socket buffers: several recvs

    def send() -> None:
        send_message(left, DATA, 0, big)
        send_message(left, BARRIER, 7)
        send_object(left, ("split", "v", (3, 9)))

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    assert receive_message(right) == (DATA, 0, big)
    assert receive_message(right) == (BARRIER, 7, b"")
    assert receive_object(right) == ("split", "v", (3, 9))
    sender.join()
    left.close()
    assert receive_message(right) is None
    with pytest.raises(EOFError):
        receive_object(right)


def test_a_connection_out_of_credits_blocks_its_sender_until_the_consumer_takes() -> None:
    gate = InputGate([("a", 0), ("b", 0)], credits=2)
    gate.put(0, DATA, 0, b"1")
    gate.put(0, DATA, 0, b"2")
    sent = threading.Event()

    def third() -> None:
        gate.put(0, DATA, 0, b"3")
        sent.set()

    threading.Thread(target=third, daemon=True).start()
    assert not sent.wait(0.2)  # two items wait unprocessed: no credit left
    gate.put(1, DATA, 0, b"other")  # another connection still sends
    first = gate.take(0)
    assert first is not None and first.payload == b"1"
    assert not sent.wait(0.2)  # taken is not processed
    gate.release(first)
    assert sent.wait(2)
    assert [gate.take(0).payload for _ in range(3)] == [b"2", b"other", b"3"]  # type: ignore[union-attr]
    assert gate.take(0) is None


def test_a_blocked_connection_waits_aside_and_comes_back_in_order() -> None:
    gate = InputGate([("a", 0), ("b", 0)])
    gate.block(0)
    for payload in (b"a1", b"a2"):
        gate.put(0, DATA, 0, payload)
    gate.put(1, DATA, 0, b"b1")
    gate.put_control(("cancel",))
    taken = [gate.take(0), gate.take(0)]
    assert [(t.connection, t.payload) for t in taken if t] == [(1, b"b1"), (-1, ("cancel",))]
    assert gate.take(0) is None
    gate.unblock_all()
    assert [gate.take(0).payload for _ in range(2)] == [b"a1", b"a2"]  # type: ignore[union-attr]


def test_a_closed_gate_lets_a_blocked_sender_go() -> None:
    gate = InputGate([("a", 0)], credits=1)
    gate.put(0, DATA, 0, b"1")
    done = threading.Event()
    threading.Thread(target=lambda: (gate.put(0, DATA, 0, b"2"), done.set()),
                     daemon=True).start()
    assert not done.wait(0.2)
    gate.close()
    assert done.wait(2)


def test_a_partition_routes_each_frame_by_tag_and_events_once_per_connection() -> None:
    first, second = InputGate([("p", 0)]), InputGate([("p", 0)])
    to_first, to_second = LocalConnection(first, 0), LocalConnection(second, 0)
    # Tags 0 and 2 reach the same subtask (two edges into it): one connection.
    partition = ResultPartition({0: to_first, 1: to_second, 2: to_first})
    partition.ship([pack_long(1), b"x", pack_long(2), b"y", pack_long(0), b"z"])
    partition.broadcast(BARRIER, 4)
    assert [(i.kind, i.payload) for i in iter(lambda: first.take(0), None)] == [
        (DATA, b"y"), (DATA, b"z"), (BARRIER, b"")]
    assert [(i.kind, i.checkpoint_id) for i in iter(lambda: second.take(0), None)] == [
        (DATA, 0), (BARRIER, 4)]


def test_alignment_waits_for_every_live_connection() -> None:
    aligner = BarrierAligner(3)
    assert not aligner.barrier(0, 1)
    assert not aligner.barrier(2, 1)
    assert aligner.barrier(1, 1)
    assert aligner.pending is None
    # A connection that finishes mid-alignment completes it; later ones skip it.
    assert not aligner.barrier(0, 2)
    assert not aligner.barrier(1, 2)
    assert aligner.end_of_partition(2) == 2
    assert not aligner.all_ended
    assert not aligner.barrier(0, 3)
    assert aligner.barrier(1, 3)
    assert aligner.end_of_partition(0) is None
    assert aligner.end_of_partition(1) is None
    assert aligner.all_ended


def test_a_second_checkpoint_during_an_alignment_is_an_error() -> None:
    aligner = BarrierAligner(2)
    aligner.barrier(0, 5)
    with pytest.raises(RuntimeError, match="barrier 6 arrived while checkpoint 5"):
        aligner.barrier(1, 6)


#: Set by unpickling a :class:`Payload`.
UNPICKLED: list[bool] = []


class Payload:
    def __reduce__(self) -> tuple[Any, ...]:
        return UNPICKLED.append, (True,)


def test_the_driver_unpickles_nothing_from_a_connection_without_the_run_token() -> None:
    server = ControlServer("a" * 32)
    try:
        for token in ("b" * 32, ""):  # a wrong token, then none at all
            with (socket.create_connection(("127.0.0.1", server.port)) as sock,
                  contextlib.suppress(ConnectionResetError, BrokenPipeError)):
                if token:
                    send_token(sock, token)
                send_object(sock, Payload())
                send_object(sock, Payload())
                while sock.recv(1024):  # until the server closes it
                    pass
        assert not UNPICKLED and server.get(0.2) is None
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            send_token(sock, "a" * 32)
            send_object(sock, ("hello", 0, 1))
            received = server.get(5)
        assert received is not None and received[1] == ("hello", 0, 1)
    finally:
        server.close()
