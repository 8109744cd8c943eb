"""One slot of a pipelined job (Flink's TaskExecutor slot): a task of the job's one Spark
barrier stage, which runs for the job's life.

Slot ``i`` hosts subtask ``i`` of every vertex that has one (Flink's default slot sharing),
each in a thread of its own. The slots find one another through the barrier stage's
``allGather``; each listens for the connections of remote producers and opens one connection
per remote consumer of its own subtasks. The driver's control connection brings each
subtask's restored state, the sources' splits, checkpoint barriers, the end of input and
cancellation, and takes acknowledged snapshots and counters back.

A failing subtask fails its slot, so Spark fails the stage and starts it again: the new
attempt's slots start from the latest completed checkpoint, which the driver hands them
(Flink's full restart).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dataflow_engine.functions import shipped
from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.network.input_gate import DEFAULT_CREDITS, InputGate
from dataflow_engine.runtime.network.result_partition import (
    Connection,
    LocalConnection,
    RemoteConnection,
    ResultPartition,
)
from dataflow_engine.runtime.network.wire import (
    receive_message,
    receive_object,
    send_object,
    send_token,
    token_matches,
)
from dataflow_engine.runtime.secrets import SecretValues
from dataflow_engine.runtime.taskmanager.pipelined_task import PipelinedStreamTask
from dataflow_engine.runtime.taskmanager.stream_task import stdout_spooled
from dataflow_engine.runtime.tasks.descriptors import EpochInput, InputKind, TaskDescriptor

SubtaskKey = tuple[str, int]

#: Seconds a slot waits for its remote producers to connect.
_ACCEPT_TIMEOUT = 120.0


@dataclass(frozen=True)
class PipelinedPlan:
    """What every slot of a pipelined job gets (the same for all, in the task's closure)."""

    #: Every connection's first bytes: a slot and the driver unpickle only what comes from
    #: the same run.
    token: str
    #: The driver's control address.
    driver: tuple[str, int]
    #: Topological order.
    descriptors: tuple[TaskDescriptor, ...]
    #: Vertex id -> frame tag -> the consumer subtask it is for.
    routes: dict[str, dict[int, SubtaskKey]]
    #: Subtask -> the producer subtasks it reads, each once (one connection each).
    producers: dict[SubtaskKey, tuple[SubtaskKey, ...]]
    secret_values: SecretValues
    #: Seconds a busy task may keep records buffered (Flink's execution.buffer-timeout).
    buffer_timeout: float
    credits: int = DEFAULT_CREDITS

    @property
    def slots(self) -> int:
        return max(d.parallelism for d in self.descriptors)

    def hosted(self, slot: int) -> list[TaskDescriptor]:
        return [d for d in self.descriptors if slot < d.parallelism]


def run_slot(plan: PipelinedPlan, index: int,
             _items: Iterable[Any]) -> Iterator[tuple[int, None]]:
    """The barrier stage's partition function: partition ``i`` is slot ``i``."""
    from pyspark import BarrierTaskContext

    context = BarrierTaskContext.get()
    TaskSlot(plan, index, context.attemptNumber(), context.taskAttemptId()).run(
        lambda address: list(context.allGather(address)))
    yield index, None


class TaskSlot:
    def __init__(self, plan: PipelinedPlan, index: int, attempt: int, task_id: int) -> None:
        """``attempt``: the Spark task's attempt number; ``task_id``: its id, unique in the
        application (the lowest of a stage attempt's slots names that attempt)."""
        self.plan, self.index, self.attempt, self.task_id = plan, index, attempt, task_id
        self.gates: dict[SubtaskKey, InputGate] = {}
        self.tasks: dict[SubtaskKey, PipelinedStreamTask] = {}
        self.sockets: list[socket.socket] = []
        self.errors: list[BaseException] = []
        #: The driver cancelled the slot (or was lost): what fails from then on is its doing.
        self.cancelled = False
        self._control_lock = threading.Lock()
        self.control: socket.socket | None = None

    def run(self, all_gather: Callable[[str], list[str]]) -> None:
        plan = self.plan
        if plan.secret_values:
            secrets.install(plan.secret_values)
        for descriptor in plan.descriptors:
            shipped.install(descriptor.shipped)
        spool = plan.descriptors[0].print_spool
        with contextlib.ExitStack() as stack:
            if spool is not None:
                stack.enter_context(stdout_spooled(os.path.join(
                    spool, f"slot-{self.index}-{self.attempt}-{uuid.uuid4().hex}.stdout")))
            try:
                self._run(all_gather)
            finally:
                self._close()
        if self.errors:
            raise self.errors[0]

    def _run(self, all_gather: Callable[[str], list[str]]) -> None:
        plan = self.plan
        control = self.control = socket.create_connection(plan.driver)
        self.sockets.append(control)
        host = control.getsockname()[0]
        server = socket.create_server((host, 0), backlog=128)
        self.sockets.append(server)
        gathered = [item.split(" ") for item in
                    all_gather(f"{self.task_id} {host}:{server.getsockname()[1]}")]
        addresses = [address for _, address in gathered]
        stage_attempt = min(int(task_id) for task_id, _ in gathered)
        send_token(control, plan.token)
        send_object(control, ("hello", self.index, stage_attempt))
        message = receive_object(control)
        if message[0] != "start":
            return  # the driver cancelled before the job started
        _, checkpoint_id, restores = message
        for descriptor in plan.hosted(self.index):
            key = (descriptor.vertex_id, self.index)
            self.gates[key] = InputGate(plan.producers.get(key, ()), plan.credits)
        remote = sum(1 for key, gate in self.gates.items()
                     for producer in gate.producers if producer[1] != self.index)
        acceptor = threading.Thread(target=self._accept, args=(server, remote), daemon=True,
                                    name=f"slot-{self.index}-acceptor")
        acceptor.start()
        for descriptor in plan.hosted(self.index):
            key = (descriptor.vertex_id, self.index)
            start = EpochInput(checkpoint_id, tuple(
                restores.get(key) if i == self.index else None
                for i in range(descriptor.parallelism)))
            self.tasks[key] = PipelinedStreamTask(
                descriptor, self.index, self.attempt, start, self.gates[key],
                self._partition(descriptor, addresses), self._report, plan.buffer_timeout)
        acceptor.join()
        if self.errors:
            return
        threads = [threading.Thread(target=self._run_task, args=(task,), daemon=True,
                                    name=f"{task.descriptor.task_name}-{self.index}")
                   for task in self.tasks.values()]
        for thread in threads:
            thread.start()
        threading.Thread(target=self._read_control, daemon=True,
                         name=f"slot-{self.index}-control").start()
        self._report(("running", None, self.index))
        for thread in threads:
            thread.join()

    def _partition(self, descriptor: TaskDescriptor, addresses: list[str]) -> ResultPartition:
        producer = (descriptor.vertex_id, self.index)
        connections: dict[SubtaskKey, Connection] = {}
        routes: dict[int, Connection] = {}
        for tag, consumer in self.plan.routes[descriptor.vertex_id].items():
            if consumer not in self.plan.producers or producer not in self.plan.producers[consumer]:
                continue  # a tag this subtask never writes
            connection = connections.get(consumer)
            if connection is None:
                if consumer[1] == self.index:
                    gate = self.gates[consumer]
                    connection = LocalConnection(gate, gate.index[producer])
                else:
                    host, port = addresses[consumer[1]].rsplit(":", 1)
                    sock = socket.create_connection((host, int(port)))
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self.sockets.append(sock)
                    send_token(sock, self.plan.token)
                    send_object(sock, (consumer, producer))
                    connection = RemoteConnection(sock)
                connections[consumer] = connection
            routes[tag] = connection
        return ResultPartition(routes)

    def _accept(self, server: socket.socket, count: int) -> None:
        """Takes the connections of this slot's remote producers, ``count`` of them; one that
        does not come from the job is closed and does not count."""
        server.settimeout(_ACCEPT_TIMEOUT)
        accepted = 0
        try:
            while accepted < count:
                sock, _address = server.accept()
                sock.settimeout(_ACCEPT_TIMEOUT)
                if not token_matches(sock, self.plan.token):  # not one of ours
                    sock.close()
                    continue
                consumer, producer = receive_object(sock)
                sock.settimeout(None)
                self.sockets.append(sock)
                gate = self.gates[consumer]
                threading.Thread(target=self._read_data,
                                 args=(sock, gate, gate.index[producer]), daemon=True,
                                 name=f"slot-{self.index}-reader").start()
                accepted += 1
        except OSError as error:
            self.errors.append(RuntimeError(
                f"slot {self.index}: {count - accepted} of its {count} remote producers did "
                f"not connect within {_ACCEPT_TIMEOUT:.0f} s ({error})"))

    @staticmethod
    def _read_data(sock: socket.socket, gate: InputGate, connection: int) -> None:
        with contextlib.suppress(OSError, EOFError):
            while (message := receive_message(sock)) is not None:
                gate.put(connection, *message)

    def _read_control(self) -> None:
        """The driver's messages, to the subtasks they are for; a lost driver cancels all."""
        assert self.control is not None
        try:
            while True:
                message = receive_object(self.control)
                kind = message[0]
                if kind == "split":
                    self.gates[(message[1], self.index)].put_control(("split", message[2]))
                elif kind in ("barrier", "end"):
                    for key, task in self.tasks.items():
                        if (task.descriptor.input_kind is InputKind.SOURCE
                                and (kind == "barrier" or message[1] in (None, key[0]))):
                            self.gates[key].put_control(message[:2])
                else:
                    break
        except (OSError, EOFError):
            pass
        self.cancelled = True
        self._cancel()

    def _run_task(self, task: PipelinedStreamTask) -> None:
        try:
            task.run()
        except BaseException as error:
            if self.cancelled or self.errors:  # brought down by a cancel or the first failure
                return
            self.errors.append(error)
            self._report(("failed", *task.key, repr(error)))
            self._cancel()
            self._close()  # a send blocked on a peer waiting for this task gives up at once

    def _report(self, message: tuple[Any, ...]) -> None:
        assert self.control is not None
        with self._control_lock, contextlib.suppress(OSError):
            send_object(self.control, message)

    def _cancel(self) -> None:
        for gate in self.gates.values():
            gate.put_control(("cancel",))
            gate.close()

    def _close(self) -> None:
        for gate in self.gates.values():
            gate.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
