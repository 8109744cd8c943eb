"""The StreamGraph: one StreamNode per operator, with partitioning folded into StreamEdges.

As in Flink's StreamGraphGenerator, union and partitioning are virtual: a consumer of a union
gets one in-edge per unioned stream, and the partitioner closest to the consumer wins.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dataflow_engine.errors import SpecError, SpecProblem
from dataflow_engine.spec.catalog import (
    ROW_FORMATS,
    Category,
    default_parallelism,
    is_bounded,
    kind_of,
)
from dataflow_engine.spec.model import (
    DEFAULT_SLOT_SHARING_GROUP,
    DataflowJobSpec,
    ExchangeMode,
    InputSpec,
    OperatorSpec,
    OperatorType,
    Partitioning,
    RuntimeMode,
    WindowFunctionKind,
    WindowTime,
)
from dataflow_engine.types.avro_form import avro_codec
from dataflow_engine.types.csv_form import unwritable_field
from dataflow_engine.types.typeinfo import (
    RowTypeInfo,
    TypeInformation,
    Types,
    parse_type,
    type_text,
)


class ChainingStrategy(StrEnum):
    ALWAYS = "ALWAYS"
    HEAD = "HEAD"
    NEVER = "NEVER"


class PartitionerKind(StrEnum):
    """Flink's StreamPartitioner implementations, by the name Flink prints for them."""

    FORWARD = "FORWARD"
    REBALANCE = "REBALANCE"
    RESCALE = "RESCALE"
    SHUFFLE = "SHUFFLE"
    BROADCAST = "BROADCAST"
    GLOBAL = "GLOBAL"
    HASH = "HASH"

    @property
    def is_pointwise(self) -> bool:
        """Pointwise partitioners connect each producer to a subrange of the consumers."""
        return self in (PartitionerKind.FORWARD, PartitionerKind.RESCALE)


_USER_PARTITIONING = {
    Partitioning.FORWARD: PartitionerKind.FORWARD,
    Partitioning.REBALANCE: PartitionerKind.REBALANCE,
    Partitioning.RESCALE: PartitionerKind.RESCALE,
    Partitioning.SHUFFLE: PartitionerKind.SHUFFLE,
    Partitioning.BROADCAST: PartitionerKind.BROADCAST,
    Partitioning.GLOBAL: PartitionerKind.GLOBAL,
}


class StreamExchangeMode(StrEnum):
    PIPELINED = "PIPELINED"
    BATCH = "BATCH"
    UNDEFINED = "UNDEFINED"


@dataclass(slots=True)
class StreamEdge:
    source_id: int
    target_id: int
    partitioner: PartitionerKind
    #: Key selector of a HASH edge: field index, field name or ``module:callable``.
    key_selector: int | str | None = None
    exchange_mode: StreamExchangeMode = StreamExchangeMode.UNDEFINED
    #: Input number of the target (0 for one-input operators; unions keep 0 for every stream).
    type_number: int = 0
    #: Position among the target's in-edges; keeps ids unique when a stream is unioned twice.
    input_index: int = 0
    #: The side output (OutputTag id) this edge carries; None: the main output.
    output_tag: str | None = None
    #: PyFlink's key type of a HASH edge (how its keys hash); None: the keys' own Java hash.
    key_type: TypeInformation | None = None

    @property
    def edge_id(self) -> str:
        tag = f"_{self.output_tag}" if self.output_tag is not None else ""
        return (f"{self.source_id}_{self.target_id}_{self.type_number}_"
                f"{self.partitioner.value}_{self.input_index}{tag}")


@dataclass(slots=True)
class StreamNode:
    id: int
    name: str
    uid: str
    operator_type: OperatorType
    #: Flink's operator name, e.g. ``Flat Map``; chain names are made of these.
    operator_name: str
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    chaining_strategy: ChainingStrategy
    function: str | None
    args: dict[str, Any]
    in_edges: list[StreamEdge] = field(default_factory=list)
    out_edges: list[StreamEdge] = field(default_factory=list)
    #: Its records carry event timestamps (an assigner is upstream, or it is one).
    event_time: bool = False
    #: Reads a keyed stream: a keyed operator, or a ``process`` whose inputs are all keyBy.
    keyed: bool = False
    #: The type of its records (Flink's outputType): declared, inherited from its input, or
    #: a source's own; None: Python objects of any type (PyFlink's PICKLED_BYTE_ARRAY).
    output_type: TypeInformation | None = None

    @property
    def is_source(self) -> bool:
        return kind_of(self.operator_type).is_source

    @property
    def is_sink(self) -> bool:
        return kind_of(self.operator_type).is_sink

    @property
    def is_keyed(self) -> bool:
        return self.keyed


@dataclass(slots=True)
class StreamGraph:
    job_name: str
    #: Resolved: AUTOMATIC becomes BATCH when every source is bounded, as in Flink.
    runtime_mode: RuntimeMode
    chaining_enabled: bool
    object_reuse: bool
    #: In topological order; ids are 1-based, in that order.
    nodes: dict[int, StreamNode]
    #: Settings that were accepted but have no effect, by field path (shown by ``compile``).
    notes: list[str] = field(default_factory=list)

    @property
    def sources(self) -> list[StreamNode]:
        return [n for n in self.nodes.values() if n.is_source]

    @property
    def edges(self) -> list[StreamEdge]:
        return [e for n in self.nodes.values() for e in n.out_edges]

    def node(self, name: str) -> StreamNode:
        for n in self.nodes.values():
            if n.name == name:
                return n
        raise KeyError(name)


def resolve_runtime_mode(spec: DataflowJobSpec) -> RuntimeMode:
    """AUTOMATIC is BATCH when every source is bounded, else STREAMING, as in Flink."""
    if spec.runtime_mode is RuntimeMode.AUTOMATIC:
        bounded = all(is_bounded(op.type, op.args) for op in spec.pipeline
                      if kind_of(op.type).is_source)
        return RuntimeMode.BATCH if bounded else RuntimeMode.STREAMING
    return spec.runtime_mode


#: Operators that can emit to side outputs (OutputTags).
SIDE_OUTPUT_PRODUCERS = frozenset({OperatorType.PROCESS, OperatorType.CO_PROCESS,
                                   OperatorType.BROADCAST_PROCESS,
                                   OperatorType.INTERVAL_JOIN, OperatorType.WINDOW,
                                   OperatorType.WINDOW_ALL, OperatorType.WINDOW_JOIN})
#: Operators whose outputs carry timestamps they set themselves (windows: the window's end).
_STAMPING = frozenset({OperatorType.TIMESTAMPS, OperatorType.WINDOW, OperatorType.WINDOW_ALL,
                       OperatorType.WINDOW_JOIN, OperatorType.INTERVAL_JOIN})


def _node_args(op: OperatorSpec) -> dict[str, Any]:
    """The operator's arguments for its StreamOperator, typed settings included."""
    args = dict(op.args)
    if op.watermark_strategy is not None:
        args["watermarkStrategy"] = op.watermark_strategy.model_dump(by_alias=True,
                                                                     exclude_none=True)
    if op.window is not None:
        args["window"] = op.window.describe()
    if op.interval_join is not None:
        args["intervalJoin"] = op.interval_join.describe()
    if op.broadcast_states is not None:
        args["broadcastStates"] = list(op.broadcast_states)
    return args


#: Operators whose records are their input's, so they keep its type (Flink's filter, keyed
#: reduce and aggregations, and the timestamp assigner).
_KEEPS_INPUT_TYPE = frozenset({OperatorType.FILTER, OperatorType.REDUCE, OperatorType.SUM,
                               OperatorType.MIN, OperatorType.MAX, OperatorType.TIMESTAMPS})
#: Sources whose records have one type whatever the job says.
_SOURCE_TYPES = {OperatorType.TEXT: Types.STRING(), OperatorType.SEQUENCE: Types.LONG()}


def _output_type(op: OperatorSpec, upstreams: list[_Upstream],
                 by_name: dict[str, StreamNode]) -> TypeInformation | None:
    """Declared, else what PyFlink gives the transformation: its input's type where records
    pass through (a union's is its first stream's), a source's own, else none (pickled)."""
    if op.output_type is not None:
        return parse_type(op.output_type)
    if op.type in _SOURCE_TYPES:
        return _SOURCE_TYPES[op.type]
    if op.type is OperatorType.KAFKA and op.args.get("valueFormat") == "avro":
        return avro_codec(op.args["avroSchema"]).row_type  # the schema's row, as in Flink
    reduces = (op.window is not None and op.window.kind is WindowFunctionKind.REDUCE
               and op.window.window_function is None)
    if (op.type in _KEEPS_INPUT_TYPE or reduces) and upstreams:
        first = upstreams[0]
        return None if first.input.side_output is not None else by_name[first.name].output_type
    return None


def _avro_misfit(type_info: TypeInformation | None, schema: str, names: bool) -> str | None:
    """Why records of this type are not rows of the Avro schema's record (by position, and by
    name too where ``names``: a source's rows are made by the schema's names), or None."""
    record = avro_codec(schema).row_type
    if not isinstance(type_info, RowTypeInfo):
        shown = "records of no declared type" if type_info is None else type_text(type_info)
        return f"the avro format reads and writes rows (Types.ROW), not {shown}"
    fields = list(zip(type_info.get_field_names(), type_info.field_types, strict=True))
    wanted = list(zip(record.get_field_names(), record.field_types, strict=True))
    if ([t for _, t in fields] != [t for _, t in wanted]
            or (names and [n for n, _ in fields] != [n for n, _ in wanted])):
        return (f"its rows are {type_text(type_info)}, the Avro schema's record "
                f"{type_text(record)}")
    return None


def _shown_type(type_info: TypeInformation | None) -> str:
    return "unset" if type_info is None else type_text(type_info)


def _function_label(reference: str | None) -> str:
    return reference.rpartition(":")[2] if reference else "?"


def _is_keyed(op: OperatorSpec, upstreams: list[_Upstream]) -> bool:
    kind = kind_of(op.type)
    if kind.broadcast_input:  # keyed when input 1 is; input 2 is the broadcast stream
        upstreams = [u for u in upstreams if u.input_number == 1]
    return kind.keyed or (kind.keyed_display_name is not None and bool(upstreams)
                          and all(u.input.key_by is not None for u in upstreams))


def _operator_name(op: OperatorSpec, upstreams: list[_Upstream]) -> str:
    """Flink's operator name; a window operator's says what it does, e.g.
    ``Window(TumblingEventTimeWindows(60000), EventTimeTrigger, sum_values)``."""
    kind = kind_of(op.type)
    if kind.keyed_display_name is not None and _is_keyed(op, upstreams):
        return kind.keyed_display_name
    if op.window is None:
        return kind.display_name
    from dataflow_engine.runtime.windowing.assigners import assigner_from
    from dataflow_engine.runtime.windowing.evictors import evictor_from
    from dataflow_engine.runtime.windowing.triggers import trigger_from

    window = op.window
    assigner = assigner_from(window.assigner.describe())
    trigger = (trigger_from(window.trigger.describe()) if window.trigger is not None
               else assigner.get_default_trigger())
    parts = [str(assigner), type(trigger).__name__]
    if window.evictor is not None:
        parts.append(str(evictor_from(window.evictor.describe())))
    parts.append(_function_label(op.function))
    if window.window_function is not None:
        parts.append(_function_label(window.window_function))
    return f"Window({', '.join(parts)})"


@dataclass(frozen=True)
class _Upstream:
    """A physical producer reached through zero or more unions, with the partitioning to apply."""

    name: str
    input: InputSpec
    path: str
    #: Input of a two-input operator (1 or 2); 0 for one-input operators.
    input_number: int = 0


class StreamGraphGenerator:
    """Builds a StreamGraph from a validated spec; graph-level problems raise SpecError."""

    def __init__(self, spec: DataflowJobSpec, job_name: str, root: str = "spec") -> None:
        self.spec = spec
        self.job_name = job_name
        self.root = root
        self.ops = {op.name: op for op in spec.pipeline}
        self.position = {op.name: i for i, op in enumerate(spec.pipeline)}
        self.problems: list[SpecProblem] = []
        self.notes: list[str] = []
        self.runtime_mode = resolve_runtime_mode(spec)

    def generate(self) -> StreamGraph:
        physical = [op for op in self.spec.pipeline
                    if kind_of(op.type).category is not Category.UNION]
        order = self._topological_order([op.name for op in physical])
        nodes: dict[int, StreamNode] = {}
        by_name: dict[str, StreamNode] = {}
        for node_id, name in enumerate(order, start=1):
            op = self.ops[name]
            upstreams = self._upstreams(name)
            node = StreamNode(
                id=node_id,
                name=name,
                uid=op.effective_uid,
                operator_type=op.type,
                operator_name=_operator_name(op, upstreams),
                parallelism=op.parallelism or default_parallelism(op.type, self.spec.parallelism),
                max_parallelism=op.max_parallelism or self.spec.max_parallelism,
                slot_sharing_group=self._slot_sharing_group(name, upstreams, by_name),
                chaining_strategy=self._chaining_strategy(name),
                function=op.function,
                args=_node_args(op),
                event_time=op.type in _STAMPING or any(
                    by_name[u.name].event_time for u in upstreams),
                keyed=_is_keyed(op, upstreams),
                output_type=_output_type(op, upstreams, by_name),
            )
            self._check_event_time(op, node, upstreams, by_name)
            self._check_row_formats(op, node, upstreams, by_name)
            nodes[node_id] = node
            by_name[name] = node
            for index, upstream in enumerate(upstreams):
                self._connect(by_name[upstream.name], node, upstream, index)
        self._note_unconsumed_late_data(nodes)
        if self.problems:
            raise SpecError(self.problems)
        return StreamGraph(
            job_name=self.job_name,
            runtime_mode=self.runtime_mode,
            chaining_enabled=self.spec.chaining,
            object_reuse=self.spec.object_reuse,
            nodes=nodes,
            notes=self.notes,
        )

    def _topological_order(self, names: list[str]) -> list[str]:
        """Kahn's algorithm over physical operators, ties broken by position in the spec."""
        producers = {n: sorted({u.name for u in self._upstreams(n)}) for n in names}
        pending = {n: len(p) for n, p in producers.items()}
        consumers: dict[str, list[str]] = {n: [] for n in names}
        for name, ups in producers.items():
            for up in ups:
                consumers[up].append(name)
        ready = [(self.position[n], n) for n, count in pending.items() if count == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            _, name = heapq.heappop(ready)
            order.append(name)
            for consumer in consumers[name]:
                pending[consumer] -= 1
                if pending[consumer] == 0:
                    heapq.heappush(ready, (self.position[consumer], consumer))
        return order

    def _upstreams(self, name: str) -> list[_Upstream]:
        """Physical producers of an operator, looking through unions (consumer-side wins)."""
        result: list[_Upstream] = []
        op = self.ops[name]
        two_inputs = kind_of(op.type).inputs == 2
        for j, edge in enumerate(op.inputs):
            path = f"{self.root}.pipeline[{self.position[name]}].inputs[{j}]"
            self._collect(edge, path, result, j + 1 if two_inputs else 0)
        return result

    def _collect(self, edge: InputSpec, path: str, result: list[_Upstream],
                 input_number: int) -> None:
        upstream = self.ops[edge.from_]
        if kind_of(upstream.type).category is not Category.UNION:
            result.append(_Upstream(upstream.name, edge, path, input_number))
            return
        has_partitioner = edge.partitioning is not None or edge.key_by is not None
        for j, inner in enumerate(upstream.inputs):
            inner_path = f"{self.root}.pipeline[{self.position[upstream.name]}].inputs[{j}]"
            merged = inner
            if has_partitioner or edge.exchange_mode is not None:
                merged = inner.model_copy(update={
                    "partitioning": edge.partitioning if has_partitioner else inner.partitioning,
                    "key_by": edge.key_by if has_partitioner else inner.key_by,
                    "key_type": edge.key_type if has_partitioner else inner.key_type,
                    "exchange_mode": edge.exchange_mode or inner.exchange_mode,
                })
            self._collect(merged, path if has_partitioner else inner_path, result, input_number)

    def _note_unconsumed_late_data(self, nodes: dict[int, StreamNode]) -> None:
        """A late-data side output nobody reads is allowed, as in Flink; compile says so."""
        for node in nodes.values():
            window = self.ops[node.name].window
            tag = window.late_data_output if window is not None else None
            if tag is not None and not any(e.output_tag == tag for e in node.out_edges):
                self.notes.append(
                    f"{self.root}.pipeline[{self.position[node.name]}].window.lateDataOutput: "
                    f"no operator reads side output {tag!r}; late elements are dropped")

    def _check_event_time(self, op: OperatorSpec, node: StreamNode,
                          upstreams: list[_Upstream], by_name: dict[str, StreamNode]) -> None:
        """Event-time windows and interval joins need timestamps: assigners upstream."""
        at = f"{self.root}.pipeline[{self.position[op.name]}]"
        stamped = any(by_name[u.name].event_time for u in upstreams)
        if (op.window is not None and op.window.assigner.time is WindowTime.EVENT
                and not stamped):
            self.problems.append(SpecProblem(
                f"{at}.window.assigner.time",
                f"operator {op.name!r}: event-time windows need records with timestamps; "
                "add a timestamps operator (assign_timestamps_and_watermarks) upstream, or "
                "use processing time"))
        if op.type is OperatorType.INTERVAL_JOIN:
            for number in (1, 2):
                if not any(by_name[u.name].event_time for u in upstreams
                           if u.input_number == number):
                    self.problems.append(SpecProblem(
                        f"{at}.inputs[{number - 1}]",
                        f"operator {op.name!r}: an interval join works in event time; input "
                        f"{number} needs timestamps (assign_timestamps_and_watermarks)"))

    def _check_row_formats(self, op: OperatorSpec, node: StreamNode,
                           upstreams: list[_Upstream], by_name: dict[str, StreamNode]) -> None:
        """The csv and avro formats read and write rows: a Kafka source's records are of its
        outputType, a Kafka sink's of its input's. csv needs rows of basic fields, avro rows
        of its schema's fields."""
        value_format = op.args.get("valueFormat")
        if op.type not in (OperatorType.KAFKA, OperatorType.KAFKA_SINK) or (
                value_format not in ROW_FORMATS):
            return
        if op.type is OperatorType.KAFKA:
            type_info, field = node.output_type, "outputType"
        else:  # what the sink reads: its inputs' one type (a side output has none)
            types = {None if u.input.side_output is not None else by_name[u.name].output_type
                     for u in upstreams}
            type_info, field = types.pop() if len(types) == 1 else None, "inputs"
        problem = (unwritable_field(type_info) if value_format == "csv"
                   else _avro_misfit(type_info, op.args["avroSchema"],
                                     names=op.type is OperatorType.KAFKA))
        if problem is not None:
            self.problems.append(SpecProblem(
                f"{self.root}.pipeline[{self.position[op.name]}].{field}",
                f"operator {op.name!r} (valueFormat {value_format}): {problem}"))

    def _slot_sharing_group(self, name: str, upstreams: list[_Upstream],
                            by_name: dict[str, StreamNode]) -> str:
        """Flink's rule: the declared group, else the inputs' group if they all share one."""
        declared = self.ops[name].slot_sharing_group
        if declared is not None:
            return declared
        groups = {by_name[u.name].slot_sharing_group for u in upstreams}
        return groups.pop() if len(groups) == 1 else DEFAULT_SLOT_SHARING_GROUP

    def _chaining_strategy(self, name: str) -> ChainingStrategy:
        op = self.ops[name]
        if op.disable_chaining:
            return ChainingStrategy.NEVER
        if op.start_new_chain or kind_of(op.type).is_source:
            return ChainingStrategy.HEAD
        return ChainingStrategy.ALWAYS

    def _connect(self, source: StreamNode, target: StreamNode, upstream: _Upstream,
                 index: int) -> None:
        spec_input = upstream.input
        if spec_input.key_by is not None:
            partitioner = PartitionerKind.HASH
        elif spec_input.partitioning is not None:
            partitioner = _USER_PARTITIONING[spec_input.partitioning]
        elif source.parallelism == target.parallelism:
            partitioner = PartitionerKind.FORWARD
        else:
            partitioner = PartitionerKind.REBALANCE
        if partitioner is PartitionerKind.FORWARD and source.parallelism != target.parallelism:
            self.problems.append(SpecProblem(
                f"{upstream.path}.partitioning",
                f"operator {target.name!r}: forward partitioning needs equal parallelism, but "
                f"{source.name!r} has {source.parallelism} and {target.name!r} has "
                f"{target.parallelism}"))
        broadcast_side = kind_of(target.operator_type).broadcast_input and (
            upstream.input_number == 2)
        if broadcast_side and partitioner is not PartitionerKind.BROADCAST:
            self.problems.append(SpecProblem(
                f"{upstream.path}.partitioning",
                f"operator {target.name!r}: input 2 of a broadcast_process is the broadcast "
                f"stream; its input from {source.name!r} needs partitioning: broadcast"))
        if target.is_keyed and partitioner is not PartitionerKind.HASH and not broadcast_side:
            self.problems.append(SpecProblem(
                f"{upstream.path}.keyBy",
                f"keyed operator {target.name!r} ({target.operator_type.value}) needs keyBy on "
                f"its input from {source.name!r}"))
        exchange = {
            None: StreamExchangeMode.UNDEFINED,
            ExchangeMode.PIPELINED: StreamExchangeMode.PIPELINED,
            ExchangeMode.BATCH: StreamExchangeMode.BATCH,
        }[spec_input.exchange_mode]
        if exchange is StreamExchangeMode.BATCH and self.runtime_mode is RuntimeMode.STREAMING:
            # As in Flink: a blocking exchange only exists in BATCH execution; in STREAMING the
            # edge stays UNDEFINED (forward edges still chain, others stay pipelined).
            exchange = StreamExchangeMode.UNDEFINED
            self.notes.append(f"{upstream.path}.exchangeMode: batch has no effect in STREAMING "
                              "mode")
        if (spec_input.side_output is not None
                and source.operator_type not in SIDE_OUTPUT_PRODUCERS):
            self.problems.append(SpecProblem(
                f"{upstream.path}.sideOutput",
                f"operator {target.name!r}: {source.name!r} ({source.operator_type.value}) has "
                "no side outputs; process functions and windows have"))
        edge = StreamEdge(
            source_id=source.id,
            target_id=target.id,
            partitioner=partitioner,
            key_selector=spec_input.key_by,
            exchange_mode=exchange,
            input_index=index,
            output_tag=spec_input.side_output,
            type_number=upstream.input_number,
            key_type=(parse_type(spec_input.key_type) if spec_input.key_type is not None
                      else None),
        )
        hashed = [e for e in target.in_edges if e.partitioner is PartitionerKind.HASH]
        if (partitioner is PartitionerKind.HASH and hashed
                and hashed[0].key_type != edge.key_type):
            self.problems.append(SpecProblem(
                f"{upstream.path}.keyType",
                f"operator {target.name!r}: its inputs hash their keys differently (keyType "
                f"{_shown_type(hashed[0].key_type)} and {_shown_type(edge.key_type)}), so one "
                "key would reach two subtasks; give every input the same keyType"))
        source.out_edges.append(edge)
        target.in_edges.append(edge)
