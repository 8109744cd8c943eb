"""Pipelined execution of a continuous job (``spec.execution: PIPELINED``): its tasks live as
long as the job, as Flink's do, instead of one Spark job per epoch.

The whole plan runs as one Spark barrier stage (see
:mod:`~dataflow_engine.runtime.taskmanager.task_slot`); records flow between subtasks as soon
as a buffer fills or a task runs out of input, so latency is no longer an epoch's. The driver
is the stage's JobMaster: every ``epochInterval`` (the buffer timeout) it hands each source
subtask the split its enumerator assigns, and it injects checkpoint barriers at the sources
when a checkpoint is due or a savepoint was asked for. A checkpoint completes once every
subtask acknowledged its barrier (or had finished); then the coordinator writes it and takes
the savepoints exactly as at an epoch boundary, so storage, restores, sinks' commits and
rescaling are those of epochs. One that has not aligned within ``checkpointing.timeout``
expires, and the job goes on.

If a slot fails, Spark starts the stage again, and its new slots start from the latest
written checkpoint (Flink's full restart); when Spark gives up, the job fails and the
operator's restart strategy takes over.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import secrets as token_source
import socket
import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from dataflow_engine.graph.states import ExecutionState
from dataflow_engine.rest.savepoints import SavepointFailureReason
from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.checkpoint.committer import Committable
from dataflow_engine.runtime.checkpoint.storage import CompletedCheckpoint
from dataflow_engine.runtime.jobmaster.epochs import ContinuousExecution
from dataflow_engine.runtime.network.wire import receive_object, send_object, token_matches
from dataflow_engine.runtime.secrets import SecretValues
from dataflow_engine.runtime.spark.spark_plan import PhysicalPlan
from dataflow_engine.runtime.taskmanager.stream_task import SubtaskEpochResult, SubtaskMetrics
from dataflow_engine.runtime.taskmanager.task_slot import (
    PipelinedPlan,
    SubtaskKey,
    run_slot,
)

_log = logging.getLogger(__name__)

#: Seconds between two reports of the subtasks' counters to the run's status.
_METRICS_INTERVAL = 1.0
#: Seconds the slots have to end after a cancel before their stage is cancelled.
_CANCEL_TIMEOUT = 30.0
#: Splits a source subtask may have unread: a source that cannot keep up gets no more (its
#: enumerator's position stays, so the input waits at the source, not in a queue), and a
#: barrier waits behind at most these.
_MAX_UNREAD_SPLITS = 2
#: Seconds between two split assignments at least (a buffer timeout of 0 flushes at once but
#: must not make the driver spin).
_MIN_SPLIT_INTERVAL = 0.01


@dataclass
class _Barrier:
    checkpoint_id: int
    started: float
    #: Each source's position when the barrier was injected: the checkpoint's.
    positions: dict[str, Any]
    acks: dict[SubtaskKey, SubtaskEpochResult] = field(default_factory=dict)
    committables: list[Committable] = field(default_factory=list)
    #: A stop-with-savepoint was waiting when it was injected.
    stopping: bool = False
    #: A periodic checkpoint was due when it was injected (else it serves savepoints only).
    periodic: bool = False


@dataclass(frozen=True)
class _RestartPoint:
    """What a restarted stage starts from: the latest written checkpoint (or the run's
    start)."""

    restores: dict[str, tuple[bytes, ...]]
    positions: dict[str, Any]
    ended: frozenset[str]
    #: Each subtask's counts as of that checkpoint, since the run started: where a restarted
    #: subtask's counting resumes.
    counts: dict[SubtaskKey, SubtaskMetrics] = field(default_factory=dict)


def pipelined_plan(plan: PhysicalPlan, token: str, driver: tuple[str, int],
                   secret_values: SecretValues, buffer_timeout: float) -> PipelinedPlan:
    """Where every frame tag of every vertex goes, and which producer subtasks each subtask
    reads (one connection each, also when it reads a producer through two edges)."""
    descriptors = tuple(vp.descriptor for vp in plan.vertices.values())
    routes: dict[str, dict[int, SubtaskKey]] = {}
    for vertex_id, vertex_plan in plan.vertices.items():
        routes[vertex_id] = {
            vertex_plan.port_offsets[data_set.id] + subtask: (consumer.target.id, subtask)
            for data_set in vertex_plan.vertex.produced_data_sets
            if (consumer := data_set.consumer) is not None
            for subtask in range(consumer.target.parallelism)}
    producers: dict[SubtaskKey, dict[SubtaskKey, None]] = {}
    for descriptor in descriptors:
        vertex_routes = routes[descriptor.vertex_id]
        for index in range(descriptor.parallelism):
            for output in descriptor.outputs:
                start, end = output.consumer_ranges[index]
                for channel in range(start, end):
                    consumer_key = vertex_routes[output.tag_offset + channel]
                    producers.setdefault(consumer_key, {})[(descriptor.vertex_id, index)] = None
    return PipelinedPlan(token, driver, descriptors, routes,
                         {key: tuple(found) for key, found in producers.items()},
                         secret_values, buffer_timeout)


class ControlServer:
    """The driver's end of the slots' control connections: one inbox for all of them."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.server = socket.create_server(("", 0), backlog=128)
        self.port = self.server.getsockname()[1]
        self.inbox: queue.SimpleQueue[tuple[socket.socket, Any]] = queue.SimpleQueue()
        #: Each slot's connection and the thread that reads it.
        self.readers: dict[socket.socket, threading.Thread] = {}
        threading.Thread(target=self._accept, daemon=True, name="dataflow-control").start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                sock, _address = self.server.accept()
                reader = self.readers[sock] = threading.Thread(
                    target=self._read, args=(sock,), daemon=True,
                    name="dataflow-control-reader")
                reader.start()

    def _read(self, sock: socket.socket) -> None:
        if not token_matches(sock, self.token):  # not a slot of this run: nothing unpickled
            sock.close()
            return
        try:
            while True:
                self.inbox.put((sock, receive_object(sock)))
        except (OSError, EOFError):
            pass
        except Exception:  # a slot's message that does not unpickle: that slot is lost
            _log.exception("a slot's control message could not be read")
            sock.close()

    def quiet(self, connections: Iterable[socket.socket]) -> bool:
        """Everything these connections sent is in the inbox (they are closed)."""
        return all(not self.readers[sock].is_alive() for sock in connections)

    def get(self, timeout: float) -> tuple[socket.socket, Any] | None:
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        for sock in [self.server, *self.readers]:
            with contextlib.suppress(OSError):
                sock.close()


class SubtaskStates:
    """Each subtask's ExecutionState as its slot reports it (Spark sees one task per slot,
    not the subtasks in it); the attempt counts the stage's restarts."""

    per_epoch = False

    def __init__(self) -> None:
        self.states: dict[SubtaskKey, tuple[ExecutionState, int]] = {}

    def poll(self) -> None:
        """Nothing to ask: the driver's loop records what the slots report."""

    def state_of(self, key: SubtaskKey) -> tuple[ExecutionState, int]:
        return self.states.get(key, (ExecutionState.CREATED, 0))

    def set(self, keys: list[SubtaskKey], state: ExecutionState, attempt: int) -> None:
        for key in keys:
            self.states[key] = (state, attempt)

    def end(self, state: ExecutionState) -> None:
        """The run ended: subtasks still running end with it."""
        for key, (current, attempt) in self.states.items():
            if not current.is_terminal:
                self.states[key] = (state, attempt)


class SparkStage:
    """Runs the barrier stage in a thread that inherits the run's Spark job group (its
    ``thread`` ends with the stage, ``error`` says how it failed)."""

    def __init__(self, sc: Any, plan: PipelinedPlan) -> None:
        from pyspark import InheritableThread

        self.sc, self.plan = sc, plan
        self.error: BaseException | None = None
        self.thread = InheritableThread(target=self._run, daemon=True)

    def _run(self) -> None:
        """The slots are the map side of a shuffle: Spark retries a failed barrier stage
        only when it is not the job's result stage."""
        slots = self.plan.slots
        try:
            rdd = self.sc.parallelize(range(slots), slots).barrier()
            rdd.mapPartitionsWithIndex(partial(run_slot, self.plan)).partitionBy(1).count()
        except BaseException as error:
            self.error = error


class PipelinedExecution(ContinuousExecution):
    """Runs a compiled continuous job as long-lived tasks until its sources end or it is
    stopped (the same contract as epochs: :meth:`run` returns True when FINISHED)."""

    #: What runs the slots (Spark's barrier stage).
    Stage: type[SparkStage] = SparkStage

    def task_states(self, job_group: str) -> SubtaskStates:
        self.job_group = job_group  # what a cancel that the slots do not heed cancels
        return self.subtask_states

    def restore(self, restore: str = "latest", allow_non_restored_state: bool = False,
                deployment: str = "") -> None:
        self.subtask_states = SubtaskStates()
        self.restarts = 0
        self.job_group = ""
        self.stage: SparkStage | None = None
        super().restore(restore, allow_non_restored_state, deployment)
        self._restart_point = _RestartPoint(
            dict(self.restores), {s.uid: s.enumerator.position() for s in self.sources},
            frozenset(self.ended))

    def run(self, stop: threading.Event) -> bool:
        server = ControlServer(token_source.token_hex(16))
        try:
            return self._run(stop, server)
        except BaseException:
            if self.stage is not None and self.stage.thread.is_alive():
                self._cancel(self.stage, server, ExecutionState.FAILED)
            raise
        finally:
            server.close()
            self.close()

    # -- the driver's loop ------------------------------------------------------------------

    def _run(self, stop: threading.Event, server: ControlServer) -> bool:
        self.subtasks = [(vertex_id, i) for vertex_id, vp in self.plan.vertices.items()
                         for i in range(vp.vertex.parallelism)]
        host = self.sc.getConf().get("spark.driver.host") or socket.gethostname()
        plan = pipelined_plan(self.plan, server.token, (host, server.port),
                              secrets.installed(), self.interval)
        master = str(self.sc.master)
        if master.startswith("local") and plan.slots > self.sc.defaultParallelism:
            # Spark would wait for the slots a barrier stage needs, retrying for minutes.
            raise RuntimeError(
                f"spec.execution PIPELINED runs every subtask at once, in {plan.slots} task "
                f"slots (the widest vertex's parallelism), and {master} has "
                f"{self.sc.defaultParallelism}: lower the parallelism or use EPOCHS")
        self.next_id = self.epoch + 1
        self.slots: dict[int, socket.socket] = {}
        self.deployed: set[int] = set()
        self.attempt = -1
        self.running = False
        self.collected: dict[str, list[Any]] = {}
        #: Each subtask's counts the status has, since the run started (across restarts).
        self.reported: dict[SubtaskKey, SubtaskMetrics] = {}
        self._reset()
        stage = self.stage = self.Stage(self.sc, plan)
        stage.thread.start()
        interval = max(self.interval, _MIN_SPLIT_INTERVAL)
        next_split = self.clock()
        next_metrics = self.clock() + _METRICS_INTERVAL
        while True:
            if stop.is_set():
                self._cancel(stage, server, ExecutionState.CANCELED)
                return False
            now = self.clock()
            wait = min(max(0.0, next_split - now), max(0.0, next_metrics - now), 0.2)
            received = server.get(wait if self.running else 0.2)
            if received is not None:
                ended = self._receive(plan, *received)
                if ended is not None:  # a stop with a savepoint finishes what still runs
                    self._cancel(stage, server, ExecutionState.FINISHED)
                    return ended
            if (received is None and not stage.thread.is_alive()
                    and server.quiet(self.slots.values())  # the slots' last words are in,
                    and server.inbox.empty()):  # and read
                if stage.error is not None:
                    raise RuntimeError(f"the job's tasks failed: {stage.error}") from stage.error
                raise RuntimeError("the job's tasks ended before its input did")
            now = self.clock()
            if self.barrier is not None and now - self.barrier.started > self.coordinator.timeout:
                self._expire(self.barrier)
            if self.running and now >= next_split:
                next_split = max(next_split + interval, now)
                self._assign_splits(now)
                if self.barrier is None and not self.ending_all:
                    due = self.coordinator.checkpoint_due(now)
                    if due or self.coordinator.savepoints.waiting:
                        self._inject_barrier(now, due)
            if now >= next_metrics:
                next_metrics = now + _METRICS_INTERVAL
                self._report_metrics()

    def _reset(self) -> None:
        """The state of a stage attempt about to start, from the restart point. A drain in
        progress fails: its sources' input up to the drain would have to be read again
        first, so it is asked for again instead."""
        for request in self.draining:
            self.coordinator.savepoint_failed(
                request, SavepointFailureReason.JOB_ENDED,
                "the job restarted from its latest checkpoint while it drained")
        self.draining = []
        point = self._restart_point
        self.restores, self.ended = dict(point.restores), set(point.ended)
        for source in self.sources:
            if source.uid in point.positions:
                source.enumerator.restore(point.positions[source.uid])
        self.barrier: _Barrier | None = None
        self.finished: dict[SubtaskKey, SubtaskEpochResult] = {}
        self.unclaimed: list[Committable] = []
        self.ending: set[str] = set()
        self.ending_all = False
        #: Source subtask -> splits handed to it and not read yet.
        self.unread: dict[SubtaskKey, int] = defaultdict(int)
        #: Each subtask's counts in this stage attempt (its slots count from zero), and
        #: before it: as of the checkpoint it restarted from.
        self.totals: dict[SubtaskKey, SubtaskMetrics] = {}
        self.counted_before = dict(point.counts)
        #: The busy time of this attempt's subtasks already reported.
        self.busy_reported: dict[SubtaskKey, int] = {}
        self.coordinator.discard_pending()

    def _receive(self, plan: PipelinedPlan, sock: socket.socket,
                 message: tuple[Any, ...]) -> bool | None:
        """Handles one slot's message; True or False once the run ended."""
        kind = message[0]
        if kind == "hello":
            _, slot, attempt = message
            if attempt < self.attempt:
                sock.close()
                return None
            if attempt > self.attempt:
                if self.attempt >= 0:
                    self.restarts += 1
                    _log.warning("the job's stage restarts (attempt %d) from checkpoint "
                                 "state of %s", attempt, self._restart_point.positions)
                    self._reset()
                self.attempt, self.slots, self.running = attempt, {}, False
                self.deployed = set()
            self.slots[slot] = sock
            if len(self.slots) == plan.slots:
                self._start(plan)
            return None
        if sock not in self.slots.values():
            return None  # an earlier attempt's
        key = (message[1], message[2])
        if kind == "running":
            self.deployed.add(message[2])
            self.subtask_states.set(self._hosted(plan, message[2]), ExecutionState.RUNNING,
                                    self.restarts)
            self.running = len(self.deployed) == plan.slots
            return None
        if kind == "metrics":
            self.totals[key] = message[3]
        elif kind == "ack":
            checkpoint_id, result = message[3], message[4]
            self.totals[key] = result.metrics
            if self.barrier is not None and checkpoint_id == self.barrier.checkpoint_id:
                self.barrier.acks[key] = result
                self.barrier.committables.extend(result.committables)
            else:  # an expired checkpoint's: its sinks' output goes with the next one
                self._claim(result.committables)
        elif kind == "finished":
            result = message[3]
            self.totals[key] = result.metrics
            self.finished[key] = result
            self.subtask_states.set([key], ExecutionState.FINISHED, self.restarts)
            if self.barrier is not None and key in self.barrier.acks:
                self.unclaimed.extend(result.committables)  # after the barrier: the next's
            else:
                self._claim(result.committables)
        elif kind == "split-done":
            self.unread[key] -= 1
            return None
        elif kind == "collected":
            self.collected.setdefault(message[3], []).extend(message[4])
            return None
        elif kind == "failed":
            _log.warning("subtask %d of %s failed: %s", key[1], key[0], message[3])
            self.subtask_states.set([key], ExecutionState.FAILED, self.restarts)
            return None
        if (self.barrier is not None and self._acknowledged(self.barrier)
                and self._complete(self.barrier)):
            return True
        if len(self.finished) == len(self.subtasks):
            return self._end()
        return None

    def _start(self, plan: PipelinedPlan) -> None:
        for slot, sock in self.slots.items():
            restores = {(d.vertex_id, slot): self.restores[d.vertex_id][slot]
                        for d in plan.hosted(slot) if self.restores.get(d.vertex_id)}
            self._send(sock, ("start", self.next_id, restores))
            self.subtask_states.set(self._hosted(plan, slot), ExecutionState.DEPLOYING,
                                    self.restarts)

    @staticmethod
    def _hosted(plan: PipelinedPlan, slot: int) -> list[SubtaskKey]:
        return [(d.vertex_id, slot) for d in plan.hosted(slot)]

    def _assign_splits(self, now: float) -> None:
        """The sources' next splits; none once every input ends (a drain) or while a stop's
        barrier is in flight: nothing is read after the savepoint that stops the job."""
        if self.ending_all or (self.barrier is not None and self.barrier.stopping):
            return
        for source in self.sources:
            if source.vertex_id in self.ended or source.vertex_id in self.ending:
                continue
            subtasks = [(source.vertex_id, i)
                        for i in range(self.plan.vertices[source.vertex_id].vertex.parallelism)]
            if any(self.unread[key] >= _MAX_UNREAD_SPLITS for key in subtasks):
                continue  # backpressure: the input waits at the source
            for key, split in zip(subtasks, source.enumerator.next_splits(now), strict=True):
                self.unread[key] += 1
                self._send(self.slots[key[1]], ("split", source.vertex_id, split))
            if source.enumerator.finished:
                self.ending.add(source.vertex_id)
                self._broadcast(("end", source.vertex_id))

    def _inject_barrier(self, now: float, periodic: bool) -> None:
        self.barrier = _Barrier(self.next_id, now,
                                {s.uid: s.enumerator.position() for s in self.sources},
                                committables=self.unclaimed,
                                stopping=self.coordinator.savepoints.stopping,
                                periodic=periodic)
        self.unclaimed = []
        self.next_id += 1
        self._broadcast(("barrier", self.barrier.checkpoint_id))

    def _claim(self, committables: list[Committable]) -> None:
        """Sinks' output from before the barrier in flight (or the next one): published with
        that checkpoint."""
        if self.barrier is not None:
            self.barrier.committables.extend(committables)
        else:
            self.unclaimed.extend(committables)

    def _expire(self, barrier: _Barrier) -> None:
        """The barrier did not align within ``checkpointing.timeout`` (Flink's expired
        checkpoint): the savepoints waiting for it fail, and as a periodic checkpoint it
        counts towards ``tolerableFailedCheckpoints``. The job goes on: splits flow again,
        the barrier still travels (channels keep their order, so a later one cannot overtake
        it), and the acknowledgements that come late hand their sinks' output to the next
        checkpoint, their snapshots unused."""
        self.barrier = None
        self.unclaimed[:0] = barrier.committables
        message = (f"its barriers did not align within checkpointing.timeout "
                   f"({self.coordinator.timeout:g} s)")
        for request in self.coordinator.savepoints.take():
            self.coordinator.savepoint_failed(request, SavepointFailureReason.EXPIRED,
                                              f"checkpoint {barrier.checkpoint_id}: {message}")
        if barrier.periodic:
            self.coordinator.checkpoint_failed(barrier.checkpoint_id,
                                               SavepointFailureReason.EXPIRED, message)

    def _acknowledged(self, barrier: _Barrier) -> bool:
        return all(key in barrier.acks or key in self.finished for key in self.subtasks)

    def _complete(self, barrier: _Barrier) -> bool:
        """Every subtask acknowledged the barrier: the coordinator's epoch boundary. True
        when a savepoint stopped the job."""
        self.barrier = None
        self.epoch, self.barrier_positions = barrier.checkpoint_id, barrier.positions
        self._collect_restores(barrier.acks)
        self.ended |= {vertex_id for vertex_id, vp in self.plan.vertices.items()
                       if all((vertex_id, i) in self.finished
                              for i in range(vp.vertex.parallelism))}
        self.coordinator.add_pending(barrier.committables)
        completed = self.coordinator.stats.completed
        stopped = self._boundary(barrier.started, end=False)
        self.coordinator.epoch_finished(self._kafka_partitions())
        if self.coordinator.stats.completed > completed:
            counts = {key: self._counted((barrier.acks.get(key) or self.finished[key]).metrics)
                      for key in self.subtasks}
            self._restart_point = _RestartPoint(dict(self.restores), barrier.positions,
                                                frozenset(self.ended), counts)
        if self.draining and not stopped:  # every source's input ends now
            self.ending_all = True
            self._broadcast(("end", None))
        return stopped

    def _end(self) -> bool:
        """Every subtask finished: the job's final checkpoint, or the drain's savepoints."""
        now = self.clock()
        self.epoch, self.next_id = self.next_id, self.next_id + 1
        self.barrier_positions = {s.uid: s.enumerator.position() for s in self.sources}
        self._collect_restores({})
        self.coordinator.add_pending(self.unclaimed)
        self.unclaimed = []
        end = all(s.enumerator.finished or s.vertex_id in self.ended for s in self.sources)
        if self.draining:
            return self._drained(now, end)
        self._boundary(now, end=True)
        return True

    def _collect_restores(self, acks: dict[SubtaskKey, SubtaskEpochResult]) -> None:
        for vertex_id, vertex_plan in self.plan.vertices.items():
            self.restores[vertex_id] = tuple(
                (acks.get((vertex_id, i)) or self.finished[(vertex_id, i)]).snapshot
                for i in range(vertex_plan.vertex.parallelism))

    def _snapshot(self) -> CompletedCheckpoint:
        """The state as of the barrier (or end) being completed, not the sources' positions
        now: they have gone on since it was injected."""
        return self.coordinator.snapshot(self.epoch, self.barrier_positions, self.restores)

    def _counted(self, metrics: SubtaskMetrics) -> SubtaskMetrics:
        """A subtask's counts of this stage attempt as counts since the run started."""
        before = self.counted_before.get((metrics.vertex_id, metrics.subtask_index))
        return metrics if before is None else before.plus(metrics)

    def _report_metrics(self) -> None:
        """What the subtasks counted since the last report. After a restart, the records a
        subtask reads again since the checkpoint are not counted again: the status had them
        (each record counts once, as if the job had not failed); busy time is time spent,
        and counts as it is."""
        deltas: dict[SubtaskKey, SubtaskMetrics] = {}
        for key, total in self.totals.items():
            counted, reported = self._counted(total), self.reported.get(key)
            delta = counted if reported is None else counted.beyond(reported)
            deltas[key] = replace(delta, busy_ms=total.busy_ms - self.busy_reported.get(key, 0))
            self.reported[key] = delta if reported is None else reported.plus(delta)
            self.busy_reported[key] = total.busy_ms
        collected, self.collected = self.collected, {}
        self.listener.epoch_finished(deltas, collected, self.coordinator.stats)

    # -- the slots ----------------------------------------------------------------------------

    def _send(self, sock: socket.socket, message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError):  # a lost slot fails the stage, which says why
            send_object(sock, message)

    def _broadcast(self, message: tuple[Any, ...]) -> None:
        for sock in self.slots.values():
            self._send(sock, message)

    def _cancel(self, stage: SparkStage, server: ControlServer,
                state: ExecutionState) -> None:
        """Ends the slots; subtasks still running end in ``state``. Slots of a stage attempt
        that Spark starts meanwhile (a slot that failed while it was cancelled) are told to
        end as they say hello; a stage that does not end in time is cancelled."""
        self.subtask_states.end(state)
        self._broadcast(("cancel",))
        deadline = self.clock() + _CANCEL_TIMEOUT
        while stage.thread.is_alive() and self.clock() < deadline:
            received = server.get(0.1)
            if received is not None and received[1][0] == "hello":
                self._send(received[0], ("cancel",))
        if stage.thread.is_alive():
            self.sc.cancelJobGroup(self.job_group)
            stage.thread.join()
        self._report_metrics()
