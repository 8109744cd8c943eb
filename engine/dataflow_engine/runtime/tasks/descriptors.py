"""What a Spark task needs to run one subtask of a JobVertex: plain, picklable dataclasses.

The graph objects hold cycles and the whole job; a task gets only its own vertex, flattened
here on the driver (Flink's TaskDeploymentDescriptor and StreamConfig play the same role).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.spec.model import OperatorType, RuntimeMode
from dataflow_engine.types.typeinfo import TypeInformation


class PayloadKind(StrEnum):
    """What travels on an exchange, decided by the consumer's head operator and the mode."""

    #: The record itself.
    RECORD = "RECORD"
    #: ``(key, record)``: a keyed consumer gets the key the producer already computed.
    KEYED = "KEYED"
    #: ``(key, first, aggregate, count)``: BATCH pre-aggregation of sum/min/max/reduce.
    PARTIAL = "PARTIAL"
    #: BATCH pre-aggregation of a window's reduce: ``(key, window start, window end, partial,
    #: count)``, or ``(key, timestamp, record)`` for a record the producer did not reduce.
    WINDOW_PARTIAL = "WINDOW_PARTIAL"


class InputKind(StrEnum):
    SOURCE = "SOURCE"
    #: Records deserialized from a Spark shuffle (payload per :class:`PayloadKind`).
    SHUFFLE = "SHUFFLE"
    #: Tagged frames of a persisted producer partition, read without a shuffle (forward).
    FORWARD_FRAMES = "FORWARD_FRAMES"


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """One chained operator (Flink's StreamConfig)."""

    node_id: int
    name: str
    operator_type: OperatorType
    #: Flink's operator name, e.g. ``Flat Map``.
    display_name: str
    function: str | None
    args: dict[str, Any]
    parallelism: int
    max_parallelism: int
    #: Positions (in :attr:`TaskDescriptor.operators`) of the operators chained after this one.
    chained_outputs: tuple[int, ...]
    #: Positions (in :attr:`TaskDescriptor.outputs`) of this operator's RecordWriters.
    writer_outputs: tuple[int, ...]
    #: Source split of each subtask: its elements, its number range or its file segments.
    splits: tuple[Any, ...] = ()
    #: Reads a keyed stream (``(key, record)`` input, keyed state and timers).
    keyed: bool = False
    #: Side outputs by OutputTag id: ``(chained positions, writer positions)`` of each.
    side_outputs: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict)
    #: The operator's stable id: its state is snapshotted and restored under it.
    uid: str = ""
    #: The declared type of its records: its RecordWriters convert them to it.
    output_type: TypeInformation | None = None
    #: The type of the records a sink reads (its inputs' type when they agree), by which
    #: it converts and prints them.
    input_type: TypeInformation | None = None
    #: How the keys of a keyed operator's input hash (its key groups must be its producers').
    key_type: TypeInformation | None = None


@dataclass(frozen=True, slots=True)
class AggregationConfig:
    """The consumer-side aggregation a producer pre-aggregates for (BATCH only)."""

    operator_type: OperatorType
    operator_name: str
    field: int | str | None
    function: str | None
    #: A window operator's ``args["window"]``.
    window: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class OutputConfig:
    """One RecordWriter: a produced IntermediateDataSet and how it is routed."""

    producer: int
    partitioner: PartitionerKind
    key_selector: int | str | None
    consumer_name: str
    consumer_parallelism: int
    consumer_max_parallelism: int
    #: Consumer subtasks ``[start, end)`` of each producer subtask (its ConsumerVertexGroup).
    consumer_ranges: tuple[tuple[int, int], ...]
    payload: PayloadKind
    #: Frames of consumer subtask ``i`` are tagged ``tag_offset + i``.
    tag_offset: int
    aggregation: AggregationConfig | None = None
    #: Records travel with their timestamps, and watermarks travel too.
    event_time: bool = False
    #: Producer subtask ``i`` is input channel ``channel_base + i`` of its consumers.
    channel_base: int = 0
    #: The consumer's input (1 or 2) when it has two (then every element travels as
    #: ``(input, element)``); 0 for one-input consumers.
    input_number: int = 0
    #: How a HASH edge hashes its keys (see ``key_groups.key_hash``).
    key_type: TypeInformation | None = None
    #: The declared type of the records written (the producer's output type), if any.
    record_type: TypeInformation | None = None


@dataclass(frozen=True, slots=True)
class TaskDescriptor:
    job_name: str
    vertex_id: str
    task_name: str
    parallelism: int
    max_parallelism: int
    runtime_mode: RuntimeMode
    object_reuse: bool
    #: Head first, depth first (as in :attr:`JobVertex.operators`).
    operators: tuple[OperatorConfig, ...]
    outputs: tuple[OutputConfig, ...]
    input_kind: InputKind
    input_payload: PayloadKind
    #: For :attr:`InputKind.FORWARD_FRAMES`: the tags of this vertex's frames start here.
    input_tag_offset: int = 0
    #: Tag of each collect sink's frames, by operator position.
    collect_tags: dict[int, int] = field(default_factory=dict)
    #: Where print sinks write in local mode (the driver relays it); None: the worker's stdout.
    print_spool: str | None = None
    #: Records per channel buffered before a frame is pickled.
    batch_size: int = 1024
    #: Functions of this task defined in the job's Python (lambdas, closures), by value: see
    #: :mod:`dataflow_engine.functions.shipped`.
    shipped: dict[str, Any] = field(default_factory=dict)
    #: The input is an event-time stream: ``(timestamp, payload)`` records and watermarks
    #: (a keyed exchange's batches carry them as columns: ``frames.Columns``).
    input_event_time: bool = False
    #: 2 for a two-input head: every element arrives as ``(input, element)``.
    input_count: int = 1
    #: Input channels of each subtask, by input (1 or 2): what its valves wait for.
    input_channels: tuple[dict[int, tuple[int, ...]], ...] = ()
    #: Flink's ``pipeline.auto-watermark-interval`` in ms (0: no periodic watermarks).
    auto_watermark_interval: int = 200


@dataclass(frozen=True, slots=True)
class EpochInput:
    """What one epoch of a continuous job gives the subtasks of a vertex (see
    :mod:`~dataflow_engine.runtime.jobmaster.epochs`)."""

    epoch: int
    #: Per subtask: its pickled :class:`~.snapshots.SubtaskSnapshot` of the previous epoch or
    #: a pickled :class:`~.snapshots.TaskRestore` (a restore from a checkpoint), either one
    #: possibly in a Spark broadcast (large ones); None: a fresh start.
    restores: tuple[Any, ...]
    #: Source node id -> each subtask's split of this epoch's input.
    splits: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    #: Every source upstream of the vertex ended with this epoch's input: the vertex's input
    #: ends (final watermark, operators finish), as a bounded run's does. Later epochs only
    #: hand its final watermark on.
    end_of_input: bool = False
