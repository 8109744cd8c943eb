"""DataStream, KeyedStream and DataStreamSink, with PyFlink's method names.

A stream is an operator plus the partitioning pending on the edge out of it: ``rebalance()``
and ``key_by()`` change no operator, they decide how the NEXT operator reads this one, as in
Flink, where they are virtual transformations folded into the consumer's input edge.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, cast, overload

from dataflow_engine.api.common.watermark_strategy import WatermarkStrategy
from dataflow_engine.api.datastream.windowed_stream import (
    AllWindowedStream,
    TwoStreams,
    WindowedStream,
    count_windowed,
    windowed,
)
from dataflow_engine.api.function_refs import function_reference, key_selector_reference
from dataflow_engine.api.sinks import FileSink, Sink
from dataflow_engine.api.transformations import (
    Input,
    Transformation,
    check_count,
    check_name,
    declared_type,
    operator_name,
)
from dataflow_engine.runtime.functions.output_tag import OutputTag
from dataflow_engine.runtime.state.descriptors import MapStateDescriptor
from dataflow_engine.runtime.time.durations import to_millis
from dataflow_engine.spec.model import (
    UPPER_BOUND_MAX_PARALLELISM,
    OperatorType,
    Partitioning,
    duration_text,
)
from dataflow_engine.types.typeinfo import TypeInformation, Types

if TYPE_CHECKING:
    from dataflow_engine.api.environment import StreamExecutionEnvironment


_METHOD_OF = {p: p.value for p in Partitioning} | {Partitioning.GLOBAL: "global_"}


class _OperatorSettings:
    """Settings of the operator behind a stream (PyFlink's SingleOutputStreamOperator's)."""

    def _operator(self, method: str) -> Transformation:
        raise NotImplementedError

    def set_parallelism(self, parallelism: int) -> Self:
        """Subtasks of this operator (default: the environment's parallelism)."""
        self._operator("set_parallelism").parallelism = check_count(parallelism, "parallelism")
        return self

    def set_max_parallelism(self, max_parallelism: int) -> Self:
        """Key groups of this operator: the upper bound of its parallelism when rescaled."""
        self._operator("set_max_parallelism").max_parallelism = check_count(
            max_parallelism, "max parallelism", UPPER_BOUND_MAX_PARALLELISM)
        return self

    def slot_sharing_group(self, slot_sharing_group: str) -> Self:
        """Places the operator in a group; groups not registered get 1 CPU and 1Gi per slot."""
        self._operator("slot_sharing_group").slot_sharing_group = check_name(
            slot_sharing_group, "slot sharing group")
        return self

    def disable_chaining(self) -> Self:
        """Never chain this operator with its neighbours (ChainingStrategy NEVER)."""
        self._operator("disable_chaining").disable_chaining = True
        return self

    def name(self, name: str) -> Self:
        """The operator's unique name in the spec (its inputs and outputs follow the rename);
        characters a spec name cannot have become '-' ("kafka source" is kafka-source)."""
        self._operator("name").name = operator_name(name)
        return self

    def uid(self, uid: str) -> Self:
        """A stable id, so renaming the operator keeps its identity."""
        if not isinstance(uid, str) or not uid:
            raise ValueError(f"uid must be a non-empty str, not {uid!r}")
        self._operator("uid").uid = uid
        return self


class DataStream(_OperatorSettings):
    """A stream of records produced by one operator."""

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation,
                 partitioning: Partitioning | None = None,
                 key_by: int | str | None = None, side_output: str | None = None,
                 key_type: TypeInformation | None = None) -> None:
        self._env = env
        self._transformation = transformation
        self._partitioning = partitioning
        self._key_by = key_by
        #: How the next operator hashes this stream's keys (see InputSpec.key_type).
        self._key_type = key_type
        #: This stream is the operator's side output with this OutputTag id.
        self._side_output = side_output

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    # -- operators -------------------------------------------------------------------------

    def map(self, func: object, output_type: object = None) -> DataStream:
        """One record out per record in, of ``output_type`` (PyFlink's ``Types``) when given:
        records are converted to it where they leave the chain, and print as Java's."""
        return self._apply(OperatorType.MAP, func, "map function", output_type)

    def flat_map(self, func: object, output_type: object = None) -> DataStream:
        """Any number of records out per record in (``func`` returns an iterable)."""
        return self._apply(OperatorType.FLAT_MAP, func, "flat_map function", output_type)

    def filter(self, func: object) -> DataStream:
        """Keeps the records for which ``func`` is true."""
        return self._apply(OperatorType.FILTER, func, "filter function")

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy
                                         ) -> DataStream:
        """Stamps records with event time and generates watermarks: a 'timestamps' operator
        (Flink's ``Timestamps/Watermarks``), chained to its input."""
        if not isinstance(watermark_strategy, WatermarkStrategy):
            raise TypeError("assign_timestamps_and_watermarks() takes a WatermarkStrategy, not "
                            f"{type(watermark_strategy).__name__}")
        if watermark_strategy.timestamp_assigner is None:
            raise ValueError("the WatermarkStrategy has no timestamp assigner: call "
                             "with_timestamp_assigner() (only a KafkaSource's records carry "
                             "timestamps of their own; give it the strategy in from_source)")
        return self._stamped(watermark_strategy)

    def _stamped(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        """The 'timestamps' operator; without an assigner it keeps the records' own
        timestamps (a Kafka source's)."""
        assigner, generator = watermark_strategy.timestamp_assigner, watermark_strategy.generator
        generator_reference = (function_reference(generator, None, "watermark generator")
                               if generator is not None else None)
        function = (function_reference(assigner, OperatorType.TIMESTAMPS, "timestamp assigner")
                    if assigner is not None else None)
        transformation = self._env._add(OperatorType.TIMESTAMPS, [self._edge()], function)
        transformation.watermark_strategy = watermark_strategy.spec_data(generator_reference)
        return DataStream(self._env, transformation)

    def key_by(self, key_selector: object, key_type: object = None) -> KeyedStream:
        """Hash-partitions the next operator's input by a function (or a field index or name).

        Keys hash as PyFlink's do, so a key reaches the subtask it reaches in PyFlink: as the
        pickled key, or as a value of ``key_type`` when given. A field index or name (not
        PyFlink's) hashes as Java's keyBy of that field, unless ``key_type`` is given.
        """
        return KeyedStream(self._env, self._transformation,
                           key_by=key_selector_reference(key_selector),
                           side_output=self._side_output,
                           key_type=key_hashing(key_type, key_selector))

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records this operator emitted to ``output_tag`` (a process function yields
        ``(output_tag, value)``; a window sends late data there): a StreamEdge of its own."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"get_side_output() takes an OutputTag, not "
                            f"{type(output_tag).__name__}")
        if self._side_output is not None or self._partitioning is not None:
            raise TypeError("get_side_output() is called on the operator's own stream")
        check_name(output_tag.tag_id, "OutputTag id")
        return DataStream(self._env, self._transformation, side_output=output_tag.tag_id)

    def process(self, func: object, output_type: object = None) -> DataStream:
        """A ProcessFunction: any number of records (and side outputs) per record, with
        ``ctx.timestamp()``; timers and keyed state need key_by() first."""
        return self._apply(OperatorType.PROCESS, func, "process function", output_type)

    @overload
    def connect(self, ds: DataStream) -> ConnectedStreams: ...

    @overload
    def connect(self, ds: BroadcastStream) -> BroadcastConnectedStream: ...

    def connect(self, ds: DataStream | BroadcastStream
                ) -> ConnectedStreams | BroadcastConnectedStream:
        """Two streams into one two-input operator (CoMap, CoFlatMap, (Keyed)CoProcess): this
        stream is its input 1, ``ds`` its input 2; they may differ in type. A BroadcastStream
        makes a (Keyed)BroadcastProcessFunction's input 2."""
        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds)
        return ConnectedStreams(self, self._same_environment(ds, "connect"))

    def join(self, other_stream: DataStream) -> TwoStreams:
        """A window join: ``join(b).where(k1).equal_to(k2).window(w).apply(JoinFunction)``."""
        return TwoStreams(self, self._same_environment(other_stream, "join"), "join")

    def co_group(self, other_stream: DataStream) -> TwoStreams:
        """A window coGroup: ``co_group(b).where(k1).equal_to(k2).window(w).apply(f)``."""
        return TwoStreams(self, self._same_environment(other_stream, "co_group"), "coGroup")

    def _same_environment(self, other: object, method: str) -> DataStream:
        if not isinstance(other, DataStream):
            raise TypeError(f"{method}() takes a DataStream, not {type(other).__name__}")
        if other._env is not self._env:
            raise ValueError(f"{method}() of streams from different execution environments")
        return other

    def window_all(self, window_assigner: object) -> AllWindowedStream:
        """Windows over the whole stream, evaluated by one subtask."""
        return cast(AllWindowedStream, windowed(self, window_assigner, all_windows=True))

    def count_window_all(self, size: int, slide: int = 0) -> AllWindowedStream:
        return cast(AllWindowedStream, count_windowed(self, size, slide, all_windows=True))

    def union(self, *streams: DataStream) -> DataStream:
        """Merges streams of the same type; virtual, like Flink's union: no operator runs it."""
        for stream in streams:
            if not isinstance(stream, DataStream):
                raise TypeError(f"union() takes DataStreams, not {type(stream).__name__}")
            if stream._env is not self._env:
                raise ValueError("union() of streams from different execution environments")
        inputs = [s._edge() for s in (self, *streams)]
        return DataStream(self._env, self._env._add(OperatorType.UNION, inputs))

    # -- partitioning: pending on the edge to the next operator -----------------------------

    def rebalance(self) -> DataStream:
        """Round-robin to every subtask of the next operator."""
        return self._partition(Partitioning.REBALANCE)

    def rescale(self) -> DataStream:
        """Round-robin to a local subset of the next operator's subtasks (pointwise)."""
        return self._partition(Partitioning.RESCALE)

    def shuffle(self) -> DataStream:
        """Uniformly random subtask of the next operator."""
        return self._partition(Partitioning.SHUFFLE)

    @overload
    def broadcast(self) -> DataStream: ...

    @overload
    def broadcast(self, broadcast_state_descriptor: MapStateDescriptor,
                  *other_broadcast_state_descriptors: MapStateDescriptor) -> BroadcastStream: ...

    def broadcast(self, broadcast_state_descriptor: MapStateDescriptor | None = None,
                  *other_broadcast_state_descriptors: MapStateDescriptor
                  ) -> DataStream | BroadcastStream:
        """Without descriptors: every record to every subtask of the next operator. With
        MapStateDescriptors: a BroadcastStream to ``connect`` to, whose function keeps those
        broadcast states."""
        if broadcast_state_descriptor is None:
            return self._partition(Partitioning.BROADCAST)
        descriptors = (broadcast_state_descriptor, *other_broadcast_state_descriptors)
        for descriptor in descriptors:
            if not isinstance(descriptor, MapStateDescriptor):
                raise TypeError("broadcast() takes MapStateDescriptors, not "
                                f"{type(descriptor).__name__}")
        return BroadcastStream(self._partition(Partitioning.BROADCAST),
                               [d.name for d in descriptors])

    def forward(self) -> DataStream:
        """Subtask i to subtask i; the next operator needs the same parallelism."""
        return self._partition(Partitioning.FORWARD)

    def global_(self) -> DataStream:
        """Every record to the next operator's first subtask."""
        return self._partition(Partitioning.GLOBAL)

    # -- sinks -----------------------------------------------------------------------------

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Prints every record to the executors' stdout, prefixed by ``sink_identifier``."""
        args = {} if sink_identifier is None else {"identifier": sink_identifier}
        return self._sink(OperatorType.PRINT, args)

    def sink_to(self, sink: Sink) -> DataStreamSink:
        """Writes to a :class:`FileSink`, :class:`KafkaSink`, :class:`CollectSink` or
        :class:`DiscardingSink`."""
        if not isinstance(sink, Sink):
            raise TypeError("sink_to() takes a FileSink, KafkaSink, CollectSink or "
                            "DiscardingSink, not "
                            f"{type(sink).__name__}")
        return self._sink(sink.operator_type, sink.args())

    def execute_and_collect(self, job_execution_name: str | None = None,
                            limit: int | None = None) -> CloseableIterator:
        """Runs the job (all of the environment's sinks) with this stream collected, and
        returns its records (at most ``limit``); raises JobExecutionError if the job fails."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise ValueError(f"limit must be an int >= 0, not {limit!r}")
        sink = self._sink(OperatorType.COLLECT, {})._transformation
        sink.name = f"execute-and-collect-{sink.id}"
        env = self._env
        result = (env.execute(job_execution_name) if job_execution_name else env.execute())
        records = result.check().collected[sink.name]
        return CloseableIterator(records if limit is None else records[:limit])

    def write_as_text(self, path: str | os.PathLike[str]) -> DataStreamSink:
        """Writes records as text lines, one part file per subtask under ``path``."""
        return self.sink_to(FileSink(path))

    # -- settings only real operators have ---------------------------------------------------

    def start_new_chain(self) -> DataStream:
        """Begins a new chain at this operator (it is not chained to its input)."""
        self._operator("start_new_chain").start_new_chain = True
        return self

    # -- internals -------------------------------------------------------------------------

    def _edge(self) -> Input:
        return Input(self._transformation, self._partitioning, self._key_by, self._side_output,
                     self._key_type)

    def _apply(self, operator_type: OperatorType, func: object, what: str,
               output_type: object = None) -> DataStream:
        function = function_reference(func, operator_type, what)
        transformation = self._env._add(operator_type, [self._edge()], function)
        transformation.output_type = declared_type(output_type)
        return DataStream(self._env, transformation)

    def _partition(self, partitioning: Partitioning) -> DataStream:
        return DataStream(self._env, self._transformation, partitioning=partitioning,
                          side_output=self._side_output)

    def _sink(self, operator_type: OperatorType, args: Mapping[str, Any]) -> DataStreamSink:
        return DataStreamSink(self._env._add(operator_type, [self._edge()], args=args))

    def _operator(self, method: str) -> Transformation:
        """The operator a setting applies to; virtual streams have none, so they refuse."""
        if self._side_output is not None:
            raise TypeError(f"{method}() cannot be applied to a side output: it is a stream of "
                            "its operator, not an operator. Call it on the operator")
        if self._partitioning is not None:
            raise TypeError(
                f"{method}() cannot be applied to the stream returned by "
                f"{_METHOD_OF[self._partitioning]}(): partitioning belongs to the edge into the "
                "next operator and is no operator itself. Call it on the operator before "
                "the partitioning, or on the one after it")
        if self._transformation.is_virtual:
            raise TypeError(
                f"{method}() cannot be applied to the stream returned by union(): a union is "
                "virtual (it only merges its inputs into the next operator). Call it on the "
                "unioned operators, or on the one consuming the union")
        return self._transformation


class KeyedStream(DataStream):
    """A stream whose next operator reads it hash-partitioned by key."""

    def reduce(self, func: object) -> DataStream:
        """Rolling reduce per key: emits the running result for every record."""
        return self._apply(OperatorType.REDUCE, func, "reduce function")

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        """Rolling sum of a field per key."""
        return self._aggregate(OperatorType.SUM, position_to_sum)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        """Rolling minimum of a field per key."""
        return self._aggregate(OperatorType.MIN, position_to_min)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        """Rolling maximum of a field per key."""
        return self._aggregate(OperatorType.MAX, position_to_max)

    def process(self, func: object, output_type: object = None) -> DataStream:
        """A KeyedProcessFunction (or a callable ``fn(value, ctx)``): any number of records
        out per record in, keyed state and timers."""
        return self._apply(OperatorType.PROCESS, func, "process function", output_type)

    def interval_join(self, other: KeyedStream) -> IntervalJoin:
        """Joins this keyed stream's records with ``other``'s of the same key whose event time
        is within ``between(lower, upper)`` of theirs."""
        if not isinstance(other, KeyedStream):
            raise TypeError("interval_join() takes a KeyedStream (key_by() the other stream)")
        return IntervalJoin(self, other)

    def window(self, window_assigner: object) -> WindowedStream:
        """Windows per key: ``window(TumblingEventTimeWindows.of(Time.minutes(1)))``."""
        return cast(WindowedStream, windowed(self, window_assigner, all_windows=False))

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        """Windows of ``size`` elements per key, every ``slide`` elements when sliding."""
        return cast(WindowedStream, count_windowed(self, size, slide, all_windows=False))

    def _aggregate(self, operator_type: OperatorType, field: int | str) -> DataStream:
        if isinstance(field, bool) or not isinstance(field, int | str):
            raise TypeError(f"{operator_type.value}() takes a field index or name, not {field!r}")
        if isinstance(field, int) and field < 0:
            raise ValueError(f"{operator_type.value}(): a field index must be >= 0, not {field}")
        return DataStream(self._env, self._env._add(operator_type, [self._edge()],
                                                    args={"field": field}))

    def _partition(self, partitioning: Partitioning) -> DataStream:
        raise TypeError(f"cannot override partitioning of a KeyedStream with "
                        f"{_METHOD_OF[partitioning]}(): its next operator reads it by key")

    def _operator(self, method: str) -> Transformation:
        raise TypeError(
            f"{method}() cannot be applied to a KeyedStream: key_by() partitions the edge into "
            "the next operator and is no operator itself. Call it on the operator before "
            "key_by(), or on the one after it")


def key_hashing(key_type: object, *key_selectors: object) -> TypeInformation | None:
    """How keys of these selectors hash: as ``key_type`` values when given, else as PyFlink
    hashes a function's keys (pickled) if any selector is a function, else as Java's keyBy of
    a field. Streams keyed together (connect, join) hash alike, so equal keys meet."""
    declared = declared_type(key_type, "key_type")
    if declared is None and any(not isinstance(s, int | str) for s in key_selectors):
        return Types.PICKLED_BYTE_ARRAY()
    return declared


class BroadcastStream:
    """``stream.broadcast(descriptors...)``: a broadcast input with its broadcast states."""

    def __init__(self, stream: DataStream, state_names: list[str]) -> None:
        self.stream = stream
        self.state_names = state_names


class BroadcastConnectedStream:
    """A stream connected to a BroadcastStream (PyFlink's BroadcastConnectedStream)."""

    def __init__(self, stream: DataStream, broadcast_stream: BroadcastStream) -> None:
        stream._same_environment(broadcast_stream.stream, "connect")
        self.stream = stream
        self.broadcast_stream = broadcast_stream

    def process(self, func: object, output_type: object = None) -> DataStream:
        """A BroadcastProcessFunction, or a KeyedBroadcastProcessFunction when this stream is
        keyed: ``process_element`` for its records, ``process_broadcast_element`` for the
        broadcast ones."""
        env = self.stream._env
        function = function_reference(func, OperatorType.BROADCAST_PROCESS,
                                      "broadcast process function")
        transformation = env._add(OperatorType.BROADCAST_PROCESS,
                                  [self.stream._edge(), self.broadcast_stream.stream._edge()],
                                  function)
        transformation.broadcast_states = list(self.broadcast_stream.state_names)
        transformation.output_type = declared_type(output_type)
        return DataStream(env, transformation)


class IntervalJoin:
    """``keyed.interval_join(other)``, waiting for its bounds."""

    def __init__(self, left: KeyedStream, right: KeyedStream) -> None:
        self._left, self._right = left, right

    def between(self, lower_bound: object, upper_bound: object) -> IntervalJoined:
        """Right records at left time + ``lower_bound`` up to + ``upper_bound`` (both
        inclusive; Time or Duration, or ms)."""
        lower, upper = to_millis(lower_bound, "lower_bound"), to_millis(upper_bound,
                                                                          "upper_bound")
        if lower > upper:
            raise ValueError(f"lower_bound {lower} ms is greater than upper_bound {upper} ms")
        return IntervalJoined(self._left, self._right, lower, upper)


class IntervalJoined:
    """An interval join with its bounds; ``process`` adds the join operator."""

    def __init__(self, left: KeyedStream, right: KeyedStream, lower: int, upper: int) -> None:
        self._left, self._right = left, right
        self._lower, self._upper = lower, upper
        self._lower_exclusive = self._upper_exclusive = False

    def lower_bound_exclusive(self) -> IntervalJoined:
        self._lower_exclusive = True
        return self

    def upper_bound_exclusive(self) -> IntervalJoined:
        self._upper_exclusive = True
        return self

    def process(self, process_join_function: object, output_type: object = None) -> DataStream:
        """A ProcessJoinFunction: ``process_element(left, right, ctx)`` per matching pair."""
        env = self._left._env
        function = function_reference(process_join_function, OperatorType.INTERVAL_JOIN,
                                      "process join function")
        transformation = env._add(OperatorType.INTERVAL_JOIN,
                                  [self._left._edge(), self._right._edge()], function)
        settings: dict[str, Any] = {"lowerBound": duration_text(self._lower),
                                    "upperBound": duration_text(self._upper)}
        if self._lower_exclusive:
            settings["lowerBoundExclusive"] = True
        if self._upper_exclusive:
            settings["upperBoundExclusive"] = True
        transformation.interval_join = settings
        transformation.output_type = declared_type(output_type)
        return DataStream(env, transformation)


class ConnectedStreams:
    """Two streams feeding one two-input operator (PyFlink's ConnectedStreams)."""

    def __init__(self, stream1: DataStream, stream2: DataStream) -> None:
        self.stream1 = stream1
        self.stream2 = stream2

    def key_by(self, key_selector1: object, key_selector2: object,
               key_type: object = None) -> ConnectedStreams:
        """Keys both inputs (records of one key meet in one subtask, with keyed state and
        timers for ``process``)."""
        common = key_hashing(key_type, key_selector1, key_selector2)
        return ConnectedStreams(self.stream1.key_by(key_selector1, common),
                                self.stream2.key_by(key_selector2, common))

    def map(self, func: object, output_type: object = None) -> DataStream:
        """A CoMapFunction: ``map1`` for input 1's records, ``map2`` for input 2's."""
        return self._apply(OperatorType.CO_MAP, func, "co-map function", output_type)

    def flat_map(self, func: object, output_type: object = None) -> DataStream:
        """A CoFlatMapFunction: ``flat_map1`` / ``flat_map2`` return iterables."""
        return self._apply(OperatorType.CO_FLAT_MAP, func, "co-flat-map function",
                           output_type)

    def process(self, func: object, output_type: object = None) -> DataStream:
        """A CoProcessFunction, or a KeyedCoProcessFunction after ``key_by``:
        ``process_element1`` / ``process_element2`` (and ``on_timer`` when keyed)."""
        return self._apply(OperatorType.CO_PROCESS, func, "co-process function", output_type)

    def _apply(self, operator_type: OperatorType, func: object, what: str,
               output_type: object) -> DataStream:
        env = self.stream1._env
        function = function_reference(func, operator_type, what)
        transformation = env._add(operator_type, [self.stream1._edge(), self.stream2._edge()],
                                  function)
        transformation.output_type = declared_type(output_type)
        return DataStream(env, transformation)


class CloseableIterator:
    """PyFlink's CloseableIterator of collected records (also a context manager)."""

    def __init__(self, records: list[Any]) -> None:
        self._records = iter(records)

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        return next(self._records)

    def close(self) -> None:
        self._records = iter(())

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class DataStreamSink(_OperatorSettings):
    """The end of a stream; only its settings can be changed."""

    def __init__(self, transformation: Transformation) -> None:
        self._transformation = transformation

    def _operator(self, method: str) -> Transformation:
        return self._transformation
