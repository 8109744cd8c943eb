"""The DataflowJob spec: the one model behind manifests, the Python API and the CRD's schema.

Field names are camelCase on the wire (the Kubernetes convention) and snake_case in Python.
Shape is checked here; rules that span operators (cycles, unknown inputs, chaining constraints)
live in :mod:`dataflow_engine.compiler.validation`, so that every problem is reported with its path.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from dataflow_engine.spec.quantity import QUANTITY_PATTERN
from dataflow_engine.spec.secret_refs import SettingValue
from dataflow_engine.types.typeinfo import parse_type

API_GROUP = "dataflow.io"
API_VERSION = "v1alpha1"
KIND = "DataflowJob"
DEFAULT_SLOT_SHARING_GROUP = "default"
#: The least CPU of a slot or of the driver: Kubernetes' smallest unit (less is requested as 0).
MIN_CPU = "1m"
#: The least memory of an executor (slotsPerExecutor slots) or of the driver: their JVM heap is
#: never under 512 MiB (Spark refuses an executor heap under 450 MiB), and the pod must hold it.
MIN_JVM_MEMORY = "512Mi"
#: Flink's default for ``pipeline.max-parallelism`` when the job sets none is derived from the
#: parallelism; a fixed default keeps key-group assignment stable when parallelism changes.
DEFAULT_MAX_PARALLELISM = 128
#: Flink's upper bound on key groups (``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM``).
UPPER_BOUND_MAX_PARALLELISM = 1 << 15

NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$"
#: A Kubernetes object name (DNS-1123 label: the job's name prefixes its pods and services).
MAX_JOB_NAME_LENGTH = 52
JOB_NAME_PATTERN = rf"^[a-z0-9]([-a-z0-9]{{0,{MAX_JOB_NAME_LENGTH - 2}}}[a-z0-9])?$"


class SpecModel(BaseModel):
    """Base of all spec models: camelCase aliases, unknown fields rejected (typos are errors)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=False,
    )


class RuntimeMode(StrEnum):
    """Flink's ``execution.runtime-mode``."""

    STREAMING = "STREAMING"
    BATCH = "BATCH"
    AUTOMATIC = "AUTOMATIC"


class Execution(StrEnum):
    """How a continuous job runs on Spark."""

    #: A Spark job per epoch, each starting its tasks from the last one's snapshots.
    EPOCHS = "EPOCHS"
    #: One Spark barrier stage for the job's life: long-lived tasks, records streaming
    #: between them, aligned checkpoint barriers (Flink's own execution).
    PIPELINED = "PIPELINED"


class Partitioning(StrEnum):
    """The partitioners a user may name; ``keyBy`` selects hash partitioning instead."""

    FORWARD = "forward"
    REBALANCE = "rebalance"
    RESCALE = "rescale"
    SHUFFLE = "shuffle"
    BROADCAST = "broadcast"
    GLOBAL = "global"


class ExchangeMode(StrEnum):
    """Flink's StreamExchangeMode: a ``batch`` exchange materialises its data, never chains."""

    PIPELINED = "pipelined"
    BATCH = "batch"


class OperatorType(StrEnum):
    COLLECTION = "collection"
    SEQUENCE = "sequence"
    TEXT = "text"
    DATAGEN = "datagen"
    KAFKA = "kafka"
    MAP = "map"
    FLAT_MAP = "flat_map"
    FILTER = "filter"
    REDUCE = "reduce"
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    PROCESS = "process"
    CO_MAP = "co_map"
    CO_FLAT_MAP = "co_flat_map"
    CO_PROCESS = "co_process"
    INTERVAL_JOIN = "interval_join"
    BROADCAST_PROCESS = "broadcast_process"
    TIMESTAMPS = "timestamps"
    WINDOW = "window"
    WINDOW_ALL = "window_all"
    WINDOW_JOIN = "window_join"
    UNION = "union"
    PRINT = "print"
    FILE = "file"
    KAFKA_SINK = "kafka_sink"
    COLLECT = "collect"
    DISCARD = "discard"


class InputSpec(SpecModel):
    """An edge into an operator; partitioning is a property of the edge, as in Flink."""

    from_: str = Field(alias="from", description="Name of the upstream operator.")
    partitioning: Partitioning | None = Field(
        default=None,
        description=(
            "How records are distributed to this operator's subtasks. Default: forward when "
            "both sides have the same parallelism, else rebalance."
        ),
    )
    key_by: int | str | None = Field(
        default=None,
        description="The key to hash-partition by: a field index of tuple records (0-based), a "
        "field name of mapping records, or a 'module:callable' key selector.",
    )
    exchange_mode: ExchangeMode | None = Field(
        default=None,
        description="Force a 'batch' (blocking) exchange on this edge; it is then never chained.",
    )
    side_output: str | None = Field(
        default=None, pattern=NAME_PATTERN,
        description="Read the upstream operator's side output with this OutputTag id (e.g. "
        "a window's lateDataOutput) instead of its main output.")
    key_type: str | None = Field(
        default=None, min_length=1, max_length=4096,
        description="With keyBy: hash keys as PyFlink's key_by does, as a one-field row of "
        "this type (PyFlink's key_type, e.g. 'STRING'); PICKLED_BYTE_ARRAY hashes the pickled "
        "key, as key_by without key_type does. Unset: the key's own Java hash code, as a Java "
        "job's keyBy. It decides which subtask gets a key, so keep it when upgrading a job.")

    @model_validator(mode="after")
    def _one_partitioner(self) -> InputSpec:
        if self.partitioning is not None and self.key_by is not None:
            raise ValueError("set either 'partitioning' or 'keyBy', not both")
        if self.key_type is not None and self.key_by is None:
            raise ValueError("'keyType' is the type of the keyBy's keys: set keyBy too")
        return self

    @field_validator("key_type")
    @classmethod
    def _parsable_key_type(cls, value: str | None) -> str | None:
        if value is not None:
            parse_type(value)
        return value

    @field_validator("key_by", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: Any) -> Any:
        # YAML's `true` would otherwise pass as field index 1.
        if isinstance(value, bool):
            raise ValueError("expected a field index, a field name or a 'module:callable' key "
                             f"selector, not {str(value).lower()}")
        return value


DURATION_PATTERN = r"^[0-9]+(ms|s|m|h)$"
#: Checkpoint and savepoint locations: an absolute path, a ``file:`` URI, or the URI of a
#: Hadoop filesystem (``hdfs://``, ``s3a://``...), which the driver reaches itself.
STORAGE_PATTERN = r"^(/|file:/|[A-Za-z][A-Za-z0-9+.-]*://)[^\n]*$"


def is_local_storage(uri: str) -> bool:
    """A path or ``file:`` URI, as opposed to a Hadoop filesystem's URI."""
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", uri)
    return scheme is None or scheme.group(1).lower() == "file"


def duration_seconds(text: str) -> float:
    """Seconds in a duration such as ``500ms``, ``10s``, ``2m`` or ``1h``."""
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * scale
    raise ValueError(f"{text!r} is not a duration such as '10s'")


def duration_millis(text: str) -> int:
    """Milliseconds in a duration such as ``500ms`` or ``10s``."""
    return round(duration_seconds(text) * 1000)


SIGNED_DURATION_PATTERN = r"^-?[0-9]+(ms|s|m|h)$"


def signed_duration_millis(text: str) -> int:
    """Milliseconds in a duration that may be negative, such as ``-2s``."""
    return -duration_millis(text[1:]) if text.startswith("-") else duration_millis(text)


def duration_text(millis: int) -> str:
    """The shortest exact duration text of ``millis``: ``1m``, ``5s``, ``250ms``."""
    if millis < 0:
        return f"-{duration_text(-millis)}"
    for suffix, scale in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if millis and millis % scale == 0:
            return f"{millis // scale}{suffix}"
    return f"{millis}ms"


class WatermarkStrategyType(StrEnum):
    """The WatermarkStrategy factories, by their Java names."""

    FOR_MONOTONOUS_TIMESTAMPS = "forMonotonousTimestamps"
    FOR_BOUNDED_OUT_OF_ORDERNESS = "forBoundedOutOfOrderness"
    NO_WATERMARKS = "noWatermarks"
    FOR_GENERATOR = "forGenerator"


class WatermarkStrategySpec(SpecModel):
    """How a 'timestamps' operator stamps records with event time and generates watermarks
    (Flink's WatermarkStrategy). The timestamp comes from 'timestampField', else from the
    operator's function (a TimestampAssigner: extract_timestamp(value, record_timestamp)),
    else from the records themselves (a Kafka source's record timestamps)."""

    type: WatermarkStrategyType = Field(
        description="forMonotonousTimestamps, forBoundedOutOfOrderness (needs "
        "maxOutOfOrderness), noWatermarks, or forGenerator (needs generator).")
    max_out_of_orderness: str | None = Field(
        default=None, pattern=DURATION_PATTERN,
        description="How late a record may be behind the highest timestamp seen, e.g. 5s.")
    idleness: str | None = Field(
        default=None, pattern=DURATION_PATTERN,
        description="Mark a subtask idle after this long without records (withIdleness), so "
        "it does not hold back the watermark downstream.")
    generator: str | None = Field(
        default=None,
        description="forGenerator: a 'module:callable' returning a WatermarkGenerator "
        "(on_event(event, timestamp, output), on_periodic_emit(output)).")
    timestamp_field: int | str | None = Field(
        default=None,
        description="The field holding the event time in epoch milliseconds (instead of a "
        "timestamp assigner function): a field index of tuple records or a field name of "
        "mapping records.")

    @model_validator(mode="after")
    def _complete(self) -> WatermarkStrategySpec:
        bounded = self.type is WatermarkStrategyType.FOR_BOUNDED_OUT_OF_ORDERNESS
        if bounded != (self.max_out_of_orderness is not None):
            raise ValueError("'maxOutOfOrderness' belongs to (and is needed by) "
                             "forBoundedOutOfOrderness")
        generated = self.type is WatermarkStrategyType.FOR_GENERATOR
        if generated != (self.generator is not None):
            raise ValueError("'generator' belongs to (and is needed by) forGenerator")
        if self.idleness is not None and duration_millis(self.idleness) == 0:
            raise ValueError("'idleness' must be positive")
        return self

    @field_validator("timestamp_field", mode="before")
    @classmethod
    def _field_not_boolean(cls, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, int) and value < 0):
            raise ValueError("expected a field index >= 0 or a field name")
        return value


class WindowTime(StrEnum):
    EVENT = "event"
    PROCESSING = "processing"


class WindowAssignerType(StrEnum):
    TUMBLING = "tumbling"
    SLIDING = "sliding"
    SESSION = "session"
    GLOBAL = "global"


class WindowAssignerSpec(SpecModel):
    """Which windows an element belongs to (Flink's WindowAssigner)."""

    type: WindowAssignerType = Field(
        description="tumbling (size), sliding (size, slide), session (gap or gapExtractor) or "
        "global (all elements of a key; needs a trigger, e.g. count).")
    time: WindowTime | None = Field(
        default=None, description="event or processing time (not for global windows).")
    size: str | None = Field(default=None, pattern=DURATION_PATTERN,
                             description="Length of a tumbling or sliding window, e.g. 1m.")
    slide: str | None = Field(default=None, pattern=DURATION_PATTERN,
                              description="How far consecutive sliding windows are apart.")
    offset: str | None = Field(default=None, pattern=DURATION_PATTERN,
                               description="Shift of window starts from the epoch (default 0).")
    gap: str | None = Field(default=None, pattern=DURATION_PATTERN,
                            description="Session windows: the inactivity that ends a session.")
    gap_extractor: str | None = Field(
        default=None, description="Session windows: a 'module:callable' giving each element's "
        "gap in ms (withDynamicGap).")

    @model_validator(mode="after")
    def _shape(self) -> WindowAssignerSpec:
        t = WindowAssignerType
        given = {name for name in ("size", "slide", "offset", "gap", "gap_extractor")
                 if getattr(self, name) is not None}
        allowed = {t.TUMBLING: {"size", "offset"}, t.SLIDING: {"size", "slide", "offset"},
                   t.SESSION: {"gap", "gap_extractor"}, t.GLOBAL: set()}[self.type]
        needed = {t.TUMBLING: {"size"}, t.SLIDING: {"size", "slide"}}.get(self.type, set())
        extra, missing = given - allowed, needed - given
        if extra:
            raise ValueError(f"{self.type.value} windows take no "
                             f"{', '.join(sorted(to_camel(e) for e in extra))}")
        if missing:
            raise ValueError(f"{self.type.value} windows need "
                             f"{', '.join(sorted(to_camel(m) for m in missing))}")
        if self.type is t.SESSION and len(given) != 1:
            raise ValueError("session windows need either 'gap' or 'gapExtractor'")
        if (self.type is t.GLOBAL) != (self.time is None):
            raise ValueError("'time' (event or processing) is needed by tumbling, sliding and "
                             "session windows, and global windows have none")
        return self

    def describe(self) -> dict[str, Any]:
        """The runtime's description of the assigner (times in ms)."""
        data: dict[str, Any] = {"type": self.type.value}
        if self.time is not None:
            data["time"] = self.time.value
        for name in ("size", "slide", "gap"):
            value = getattr(self, name)
            if value is not None:
                data[name] = duration_millis(value)
        if self.type in (WindowAssignerType.TUMBLING, WindowAssignerType.SLIDING):
            data["offset"] = duration_millis(self.offset or "0ms")
        if self.gap_extractor is not None:
            data["gapExtractor"] = self.gap_extractor
        return data


class TriggerType(StrEnum):
    EVENT_TIME = "eventTime"
    PROCESSING_TIME = "processingTime"
    COUNT = "count"
    CONTINUOUS_EVENT_TIME = "continuousEventTime"
    NEVER = "never"


class TriggerSpec(SpecModel):
    """When a window fires (Flink's Trigger); default: the assigner's own."""

    type: TriggerType = Field(description="eventTime, processingTime, count (count), "
                              "continuousEventTime (interval) or never.")
    count: int | None = Field(default=None, ge=1, description="count: elements per firing.")
    interval: str | None = Field(default=None, pattern=DURATION_PATTERN,
                                 description="continuousEventTime: fire every interval.")
    purging: bool = Field(default=False, description="Purge the window's contents whenever it "
                          "fires (PurgingTrigger.of(...)).")

    @model_validator(mode="after")
    def _shape(self) -> TriggerSpec:
        if (self.type is TriggerType.COUNT) != (self.count is not None):
            raise ValueError("'count' belongs to (and is needed by) a count trigger")
        if (self.type is TriggerType.CONTINUOUS_EVENT_TIME) != (self.interval is not None):
            raise ValueError("'interval' belongs to (and is needed by) a continuousEventTime "
                             "trigger")
        return self

    def describe(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type.value}
        if self.count is not None:
            data["count"] = self.count
        if self.interval is not None:
            data["interval"] = duration_millis(self.interval)
        return {"type": "purging", "trigger": data} if self.purging else data


class EvictorType(StrEnum):
    COUNT = "count"
    TIME = "time"


class EvictorSpec(SpecModel):
    """Removes elements from a window before or after it fires (Flink's Evictor)."""

    type: EvictorType = Field(description="count (keep the last maxCount) or time (keep "
                              "elements within windowSize of the newest).")
    max_count: int | None = Field(default=None, ge=1, description="count: elements kept.")
    window_size: str | None = Field(default=None, pattern=DURATION_PATTERN,
                                    description="time: the span of elements kept.")
    do_evict_after: bool = Field(default=False,
                                 description="Evict after the window function, not before.")

    @model_validator(mode="after")
    def _shape(self) -> EvictorSpec:
        if (self.type is EvictorType.COUNT) != (self.max_count is not None):
            raise ValueError("'maxCount' belongs to (and is needed by) a count evictor")
        if (self.type is EvictorType.TIME) != (self.window_size is not None):
            raise ValueError("'windowSize' belongs to (and is needed by) a time evictor")
        return self

    def describe(self) -> dict[str, Any]:
        if self.type is EvictorType.COUNT:
            return {"type": "countEvictor", "maxCount": self.max_count,
                    "doEvictAfter": self.do_evict_after}
        assert self.window_size is not None
        return {"type": "timeEvictor", "windowSize": duration_millis(self.window_size),
                "doEvictAfter": self.do_evict_after}


class WindowFunctionKind(StrEnum):
    REDUCE = "reduce"
    AGGREGATE = "aggregate"
    PROCESS = "process"
    APPLY = "apply"
    #: window_join only: a JoinFunction per pair, or a CoGroupFunction per key and window.
    JOIN = "join"
    CO_GROUP = "coGroup"


class WindowSpec(SpecModel):
    """A window operator's windows and what it computes per window (Flink's WindowedStream).
    The operator's function is the ReduceFunction, AggregateFunction, ProcessWindowFunction or
    WindowFunction that 'kind' names."""

    assigner: WindowAssignerSpec = Field(description="Which windows each element joins.")
    kind: WindowFunctionKind = Field(
        description="reduce, aggregate (create_accumulator/add/get_result/merge), process "
        "(a ProcessWindowFunction) or apply (a WindowFunction); for window_join: join (a "
        "JoinFunction, join(first, second)) or coGroup (co_group(firsts, seconds)).")
    window_function: str | None = Field(
        default=None, description="reduce/aggregate: a 'module:callable' ProcessWindowFunction "
        "given each window's result, with the window's context.")
    trigger: TriggerSpec | None = Field(default=None, description="When windows fire.")
    evictor: EvictorSpec | None = Field(default=None, description="Removes elements.")
    allowed_lateness: str | None = Field(
        default=None, pattern=DURATION_PATTERN,
        description="Event time: keep windows this long after they end; a late element "
        "fires them again.")
    late_data_output: str | None = Field(
        default=None, pattern=NAME_PATTERN,
        description="Event time: send elements too late for their windows to this side "
        "output (an OutputTag id) instead of dropping them (sideOutputLateData).")

    def describe(self) -> dict[str, Any]:
        """``args['window']`` of the window operator."""
        data: dict[str, Any] = {"assigner": self.assigner.describe(), "kind": self.kind.value}
        if self.trigger is not None:
            data["trigger"] = self.trigger.describe()
        if self.evictor is not None:
            data["evictor"] = self.evictor.describe()
        if self.allowed_lateness is not None:
            data["allowedLateness"] = duration_millis(self.allowed_lateness)
        if self.window_function is not None:
            data["windowFunction"] = self.window_function
        if self.late_data_output is not None:
            data["lateDataTag"] = self.late_data_output
        return data


class IntervalJoinSpec(SpecModel):
    """An interval join of two keyed event-time streams: a record of input 1 at time t meets
    the records of input 2 of the same key in [t + lowerBound, t + upperBound]."""

    lower_bound: str = Field(pattern=SIGNED_DURATION_PATTERN,
                             description="Start of the interval, relative to input 1's record, "
                             "e.g. -2s.")
    upper_bound: str = Field(pattern=SIGNED_DURATION_PATTERN,
                             description="End of the interval, e.g. 1s.")
    lower_bound_exclusive: bool = Field(default=False, description="Leave out the lower bound.")
    upper_bound_exclusive: bool = Field(default=False, description="Leave out the upper bound.")

    @model_validator(mode="after")
    def _ordered(self) -> IntervalJoinSpec:
        if signed_duration_millis(self.lower_bound) > signed_duration_millis(self.upper_bound):
            raise ValueError("lowerBound must not be greater than upperBound")
        return self

    def describe(self) -> dict[str, Any]:
        lower, upper = (signed_duration_millis(self.lower_bound),
                        signed_duration_millis(self.upper_bound))
        # Exclusive bounds are inclusive ones moved by a millisecond, as in Flink.
        return {"lowerBound": lower + 1 if self.lower_bound_exclusive else lower,
                "upperBound": upper - 1 if self.upper_bound_exclusive else upper}


#: A Kubernetes object name (ConfigMaps): a DNS subdomain.
OBJECT_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"


class PyFileSpec(SpecModel):
    """User code shipped with the job, without building an image: a module (.py) or an archive
    of packages (.zip, .egg) put on the Python path of the driver and of every executor, as
    Spark's --py-files does. Exactly one of configMap, path and url."""

    config_map: str | None = Field(
        default=None, pattern=OBJECT_NAME_PATTERN,
        description="A ConfigMap of the job's namespace: its .py/.zip/.egg keys (binaryData "
        "for archives), or only `key`.")
    key: str | None = Field(
        default=None, pattern=r"^[-._a-zA-Z0-9]+\.(py|zip|egg)$",
        description="With configMap: the one key to ship.")
    path: str | None = Field(
        default=None, pattern=r"^/.*\.(py|zip|egg)$",
        description="An absolute path in the driver's container, e.g. on a volume the driver's "
        "pod template mounts.")
    url: str | None = Field(
        default=None, pattern=r"^https://[^\s]+\.(py|zip|egg)$",
        description="An https URL, fetched by the driver and served to the executors by Spark.")

    @model_validator(mode="after")
    def _one_source(self) -> PyFileSpec:
        given = [name for name in ("config_map", "path", "url") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError("set exactly one of 'configMap', 'path' and 'url'")
        if self.key is not None and self.config_map is None:
            raise ValueError("'key' belongs with 'configMap'")
        return self


def _expand_input(value: Any) -> Any:
    return {"from": value} if isinstance(value, str) else value


class SlotSharingGroupSpec(SpecModel):
    """Resources of ONE slot of a slot sharing group; executors hold ``slotsPerExecutor`` slots."""

    name: str = Field(pattern=NAME_PATTERN, description="Group name, referenced by operators.")
    cpu: str = Field(default="1", pattern=QUANTITY_PATTERN,
                     description=f"CPU of one slot, at least {MIN_CPU}.")
    memory: str = Field(
        default="1Gi", pattern=QUANTITY_PATTERN,
        description="Memory of one slot; an executor's (slotsPerExecutor slots) must be at "
        f"least {MIN_JVM_MEMORY}, the least heap of its JVM.",
    )


class OperatorSpec(SpecModel):
    """One operator of the pipeline (a Flink Transformation)."""

    name: str = Field(
        pattern=NAME_PATTERN, description="Unique name; inputs refer to operators by it."
    )
    type: OperatorType = Field(description="What the operator does.")
    inputs: list[InputSpec] = Field(
        default_factory=list,
        description="Upstream operators: a name, or an object with 'from' and a partitioning.",
    )
    function: str | None = Field(
        default=None,
        description=(
            "The user function: a built-in name (e.g. 'split_words') or a 'module:callable' "
            "reference importable on the executors."
        ),
    )
    args: dict[str, Any] = Field(
        default_factory=dict, description="Type-specific arguments, e.g. {field: 1} for sum."
    )
    parallelism: int | None = Field(
        default=None, ge=1, description="Subtasks of this operator; default spec.parallelism."
    )
    max_parallelism: int | None = Field(
        default=None,
        ge=1,
        le=UPPER_BOUND_MAX_PARALLELISM,
        description="Key groups of this operator; default spec.maxParallelism.",
    )
    slot_sharing_group: str | None = Field(
        default=None,
        description=(
            "Slot sharing group; default: the inputs' group if they share one, else 'default'."
        ),
    )
    start_new_chain: bool = Field(
        default=False, description="Begin a new chain here (ChainingStrategy HEAD)."
    )
    disable_chaining: bool = Field(
        default=False, description="Never chain this operator (ChainingStrategy NEVER)."
    )
    uid: str | None = Field(
        default=None,
        min_length=1,
        description="Stable operator id (default: name); JobVertex ids derive from it.",
    )
    watermark_strategy: WatermarkStrategySpec | None = Field(
        default=None, description="type timestamps: event time and watermarks of its output.")
    window: WindowSpec | None = Field(
        default=None,
        description="type window / window_all / window_join: the windows and their function.")
    interval_join: IntervalJoinSpec | None = Field(
        default=None, description="type interval_join: the interval around input 1's records.")
    broadcast_states: list[Annotated[str, Field(min_length=1, max_length=253)]] | None = Field(
        default=None, max_length=32,
        description="type broadcast_process: names of the broadcast (map) states its function "
        "uses, as declared by broadcast(descriptors...).")

    output_type: str | None = Field(
        default=None, min_length=1, max_length=4096,
        description="The type of its records (Flink's outputType, written as PyFlink's Types: "
        "e.g. 'TUPLE<STRING, INT>', 'ROW<id INT, info STRING>', 'LIST<DOUBLE>'): records are "
        "converted to it where they leave a chain (FLOAT to 32 bits, INT to its range...) and "
        "print as Java prints them. Unset: Python objects as the function returns them; "
        "filter, reduce, sum, min, max and timestamps keep their input's type.")

    @field_validator("inputs", mode="before")
    @classmethod
    def _expand_inputs(cls, value: Any) -> Any:
        return [_expand_input(v) for v in value] if isinstance(value, list) else value

    @field_validator("output_type")
    @classmethod
    def _parsable_type(cls, value: str | None) -> str | None:
        if value is not None:
            parse_type(value)  # its ValueError names the token that breaks it
        return value

    @property
    def effective_uid(self) -> str:
        return self.uid or self.name


class RestartStrategyType(StrEnum):
    FIXED_DELAY = "fixed-delay"
    NONE = "none"


class UpgradeMode(StrEnum):
    """How a running continuous job is upgraded (and suspended), as flink-kubernetes-operator
    names it."""

    STATELESS = "stateless"
    LAST_STATE = "last-state"
    SAVEPOINT = "savepoint"


class PeriodicSavepointSpec(SpecModel):
    """Savepoints the operator takes on a schedule, and how long it keeps the ones it took
    (flink-kubernetes-operator's periodic savepoints and savepoint history)."""

    interval: str | None = Field(
        default=None, pattern=DURATION_PATTERN,
        description="Take a savepoint of the running job this often, e.g. 1h; unset: none on "
        "a schedule.")
    history_max_count: int = Field(
        default=10, ge=1, le=1000,
        description="Savepoints the operator took (periodic, upgrade, suspend, "
        "savepointTriggerNonce) kept at most; older ones are deleted with their files. Never "
        "one a user created or imported, nor one the job would restore from.")
    history_max_age: str = Field(
        default="24h", pattern=DURATION_PATTERN,
        description="Savepoints the operator took are deleted with their files this long "
        "after they completed (the same exceptions).")


class PeriodicCheckpointSpec(SpecModel):
    """Checkpoints the operator asks for on a schedule, beside the ones spec.checkpointing
    takes: each is recorded as a DataflowSnapshot."""

    interval: str = Field(
        pattern=DURATION_PATTERN,
        description="Ask the running job for a checkpoint this often, e.g. 30m.")


class SnapshotReference(SpecModel):
    """A DataflowSnapshot of the job's namespace."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
                      description="The DataflowSnapshot's name.")


class InitialSavepointSpec(SpecModel):
    """Where the job's first deployment starts from, by reference."""

    snapshot_ref: SnapshotReference = Field(
        description="A Completed DataflowSnapshot of the job's namespace: its path.")


class UpgradeSpec(SpecModel):
    """How an upgrade that does not come up healthy is undone (flink-kubernetes-operator's
    deployment rollback)."""

    rollback_timeout: str | None = Field(
        default=None, pattern=DURATION_PATTERN,
        description="A spec change whose new deployment is not healthy (RUNNING, every "
        "subtask running, and a checkpoint completed if the job checkpoints) within this "
        "time, or that fails, goes back to status.lastStableSpec from where the upgrade "
        "started (its savepoint); the DataflowJob's spec stays as written. Unset: no "
        "rollback.")


class VertexBoundsSpec(SpecModel):
    """The parallelism bounds of the JobVertex an operator is chained into."""

    operator: str = Field(min_length=1, description="An operator of the pipeline (its name).")
    min_parallelism: int = Field(default=1, ge=1, le=UPPER_BOUND_MAX_PARALLELISM,
                                 description="The vertex's least parallelism.")
    max_parallelism: int = Field(default=UPPER_BOUND_MAX_PARALLELISM, ge=1,
                                 le=UPPER_BOUND_MAX_PARALLELISM,
                                 description="The vertex's greatest parallelism.")


class AutoscalerSpec(SpecModel):
    """The job autoscaler (flink-kubernetes-operator's ``job.autoscaler.*``): each JobVertex's
    parallelism from its measured true processing rate and the load its sources must take
    (their input rate, and their backlog caught up within catchUpDuration), applied as
    parallelism overrides through a savepoint upgrade (docs/autoscaler.md)."""

    enabled: bool = Field(default=False, description="Scale the job's vertices.")
    advisory: bool = Field(
        default=False, description="Decide and record the decisions (status.autoscaler, "
        "ScalingRecommended Events), never apply them.")
    target_utilization: float = Field(
        default=0.7, gt=0, le=1,
        description="The share of the wall time the epochs of the job's vertices should fill "
        "at the target rate (an epoch's stages run one after another).")
    utilization_boundary: float = Field(
        default=0.3, ge=0, le=1,
        description="No change while the job's utilization is within this of the target.")
    catch_up_duration: str = Field(
        default="30m", pattern=DURATION_PATTERN,
        description="Time in which a source's backlog should be caught up.")
    restart_time: str = Field(
        default="5m", pattern=DURATION_PATTERN,
        description="How long a rescale is expected to stop the job: a new parallelism is "
        "sized to catch up what arrives meanwhile within catchUpDuration too, and a "
        "scale-down must leave room for it.")
    metrics_window: str = Field(
        default="15m", pattern=DURATION_PATTERN,
        description="The rates a decision is based on are averaged over this.")
    stabilization_interval: str = Field(
        default="5m", pattern=DURATION_PATTERN,
        description="No metrics are collected for this long after a deployment starts "
        "running.")
    scale_down_delay: str = Field(
        default="1h", pattern=DURATION_PATTERN,
        description="A scale-down applies only once every decision for this long asked for "
        "it (a scale-up applies at once).")
    min_parallelism: int = Field(default=1, ge=1, le=UPPER_BOUND_MAX_PARALLELISM,
                                 description="Every vertex's least parallelism.")
    max_parallelism: int = Field(default=200, ge=1, le=UPPER_BOUND_MAX_PARALLELISM,
                                 description="Every vertex's greatest parallelism (a keyed "
                                 "vertex's key groups bound it too).")
    max_scale_up_factor: float = Field(
        default=100000.0, ge=0,
        description="One decision raises a parallelism p to at most ceil(p * (1 + this)).")
    max_scale_down_factor: float = Field(
        default=0.6, ge=0, lt=1,
        description="One decision lowers a parallelism p to at least ceil(p * (1 - this)).")
    vertices: list[VertexBoundsSpec] = Field(
        default_factory=list, max_length=256,
        description="Bounds of particular vertices, instead of minParallelism and "
        "maxParallelism.")


class JobLifecycleSpec(SpecModel):
    """How the operator upgrades, suspends and snapshots the job (flink-kubernetes-operator's
    ``spec.job`` settings); none of it changes what the job computes."""

    upgrade_mode: UpgradeMode = Field(
        default=UpgradeMode.STATELESS,
        description="stateless: a changed spec (or a resume) starts from scratch; last-state: "
        "from the job's state at the upgrade (a savepoint while it runs, else its latest "
        "checkpoint); savepoint: from a savepoint taken on the way down (if the new plan "
        "cannot take the state the upgrade is refused and the job keeps running).")
    savepoint_trigger_nonce: int | None = Field(
        default=None, description="Change it to take a savepoint of the running job; "
        "status.savepoints records it.")
    initial_savepoint_path: str | None = Field(
        default=None, min_length=1, max_length=1024, pattern=STORAGE_PATTERN,
        description="A savepoint (or retained checkpoint) directory the job's first "
        "deployment starts from.")
    allow_non_restored_state: bool = Field(
        default=False, description="Drop state of operators the job no longer has instead of "
        "refusing the restore (or the upgrade).")
    initial_savepoint: InitialSavepointSpec | None = Field(
        default=None,
        description="A DataflowSnapshot the job's first deployment starts from (instead of "
        "initialSavepointPath).")
    savepoint: PeriodicSavepointSpec = Field(
        default_factory=PeriodicSavepointSpec,
        description="Periodic savepoints, and the retention of those the operator took.")
    checkpoint: PeriodicCheckpointSpec | None = Field(
        default=None, description="Periodic checkpoints the operator asks for; unset: none.")
    upgrade: UpgradeSpec = Field(default_factory=UpgradeSpec,
                                 description="Rollback of an upgrade that is not healthy.")
    drain_on_suspend: bool = Field(
        default=False,
        description="A suspend first sends the maximum watermark through the job, so its "
        "windows and event-time timers fire and its sinks commit, then takes the final "
        "savepoint (Flink's stop --drain). Meant for a job that will not resume.")
    autoscaler: AutoscalerSpec = Field(
        default_factory=AutoscalerSpec,
        description="Parallelism that follows the load, for a continuous job.")

    @model_validator(mode="after")
    def _one_initial_savepoint(self) -> JobLifecycleSpec:
        if self.initial_savepoint is not None and self.initial_savepoint_path is not None:
            raise ValueError("initialSavepointPath and initialSavepoint are exclusive: give "
                             "one")
        return self


class RestartStrategySpec(SpecModel):
    """What happens when the driver fails, like Flink's ``restart-strategy``."""

    type: RestartStrategyType = Field(
        default=RestartStrategyType.FIXED_DELAY,
        description="fixed-delay: restart up to 'attempts' times; none: fail at once.",
    )
    attempts: int = Field(default=3, ge=0, le=1000, description="Restarts before giving up.")
    delay: str = Field(
        default="10s", pattern=DURATION_PATTERN, description="Wait before a restart, e.g. 10s."
    )


class CheckpointingMode(StrEnum):
    """Flink's ``execution.checkpointing.mode``."""

    EXACTLY_ONCE = "EXACTLY_ONCE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"


class CheckpointingSpec(SpecModel):
    """Periodic checkpoints of a STREAMING job (Flink's ``execution.checkpointing.*``): source
    positions and every operator's state, from which the job resumes after a failure."""

    interval: str = Field(pattern=DURATION_PATTERN,
                          description="Time between the starts of two checkpoints, e.g. 10s; "
                          "rounded up to whole epochs.")
    mode: CheckpointingMode = Field(
        default=CheckpointingMode.EXACTLY_ONCE,
        description="EXACTLY_ONCE or AT_LEAST_ONCE (the same here: epochs never replay into "
        "state; see docs/streaming.md).")
    timeout: str = Field(default="10m", pattern=DURATION_PATTERN,
                         description="A checkpoint taking longer than this fails.")
    min_pause: str = Field(default="0ms", pattern=DURATION_PATTERN,
                           description="Least time between the end of one checkpoint and the "
                           "start of the next.")
    tolerable_failed_checkpoints: int = Field(
        default=0, ge=0, le=1000,
        description="Checkpoints that may fail in a row before the job fails (and restarts "
        "per restartStrategy from the last completed one).")
    retained: int = Field(default=1, ge=1, le=100,
                          description="Completed checkpoints kept (state.checkpoints.num-"
                          "retained); older ones are deleted.")
    storage: str | None = Field(
        default=None, min_length=1, max_length=1024, pattern=STORAGE_PATTERN,
        description="Directory the checkpoints are written to: a path on a volume the driver "
        "mounts (a PVC on Kubernetes), or a URI of a Hadoop filesystem on the driver's Spark "
        "classpath (hdfs://; s3a:// and others with their connector). Unset: kept in the "
        "driver's memory only, so a driver restart begins again from scratch (Flink's "
        "JobManagerCheckpointStorage).")
    savepoint_storage: str | None = Field(
        default=None, min_length=1, max_length=1024, pattern=STORAGE_PATTERN,
        description="Directory savepoints are written to (state.savepoints.dir), each in a "
        "savepoint-<id>-<hex> directory of its own that is never deleted. Unset: "
        "<storage>/savepoints.")


class DriverSpec(SpecModel):
    """Resources of the driver pod (Kubernetes backend): the Spark driver's JVM and the runner."""

    cpu: str = Field(default="500m", pattern=QUANTITY_PATTERN,
                     description=f"CPU request of the driver pod, at least {MIN_CPU}.")
    memory: str = Field(
        default="1Gi",
        pattern=QUANTITY_PATTERN,
        description=f"Memory request and limit of the driver pod, at least {MIN_JVM_MEMORY}; "
        f"the JVM heap gets half of it (at least {MIN_JVM_MEMORY}), the Python runner the rest.",
    )


class PodTemplatesSpec(SpecModel):
    """Pod templates merged into the generated driver and executor pods."""

    driver: dict[str, Any] | None = Field(
        default=None, description="A Pod template (metadata, spec) for the driver pod."
    )
    executor: dict[str, Any] | None = Field(
        default=None, description="A Pod template (metadata, spec) for the executor pods."
    )

    @field_validator("driver", "executor")
    @classmethod
    def _pod_shaped(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            unknown = set(value) - {"metadata", "spec"}
            if unknown:
                raise ValueError(f"a pod template has only 'metadata' and 'spec', not "
                                 f"{', '.join(sorted(unknown))}")
            for key in ("metadata", "spec"):
                if key in value and not isinstance(value[key], dict):
                    raise ValueError(f"'{key}' of a pod template must be an object")
        return value


class DataflowJobSpec(SpecModel):
    """What a DataflowJob runs: its pipeline and how the pipeline is parallelised and placed."""

    parallelism: int = Field(default=1, ge=1, description="Default operator parallelism.")
    max_parallelism: int = Field(
        default=DEFAULT_MAX_PARALLELISM,
        ge=1,
        le=UPPER_BOUND_MAX_PARALLELISM,
        description="Default number of key groups (upper bound of any operator's parallelism).",
    )
    runtime_mode: RuntimeMode = Field(
        default=RuntimeMode.AUTOMATIC,
        description="STREAMING, BATCH, or AUTOMATIC (BATCH when every source is bounded, "
        "else STREAMING).",
    )
    chaining: bool = Field(default=True, description="Operator chaining (false disables it).")
    object_reuse: bool = Field(
        default=False, description="Pass records between chained operators without copying."
    )
    auto_watermark_interval: str = Field(
        default="200ms", pattern=DURATION_PATTERN,
        description="How often watermark generators emit periodic watermarks in STREAMING "
        "mode (pipeline.auto-watermark-interval); 0ms: only a bounded input's final one.")
    epoch_interval: str = Field(
        default="1s", pattern=DURATION_PATTERN,
        description="STREAMING jobs with an unbounded source run in epochs: every interval "
        "each source's new input flows through the whole plan, so results of a steady input "
        "appear within about this time.")
    execution: Execution = Field(
        default=Execution.EPOCHS,
        description="How a continuous job runs: EPOCHS (a Spark job every epochInterval) or "
        "PIPELINED (tasks that live as long as the job, exchanging records as they come, "
        "as Flink's do: sources get new input and buffers leave every epochInterval, Flink's "
        "buffer timeout; it needs a task slot per subtask of the widest vertex at once). "
        "Bounded jobs ignore it.")
    checkpointing: CheckpointingSpec | None = Field(
        default=None, description="Periodic checkpoints of a STREAMING job; unset: none. "
        "Refused in a BATCH job (AUTOMATIC with only bounded sources is BATCH).")
    slots_per_executor: int = Field(
        default=1, ge=1, description="Slots per executor (taskmanager.numberOfTaskSlots)."
    )
    slot_sharing_groups: list[SlotSharingGroupSpec] = Field(
        default_factory=lambda: [SlotSharingGroupSpec(name=DEFAULT_SLOT_SHARING_GROUP)],
        description="Per-slot resources of each slot sharing group.",
    )
    pipeline: list[OperatorSpec] = Field(
        min_length=1, description="The operators, each naming its inputs."
    )
    parallelism_overrides: dict[
        str, Annotated[int, Field(ge=1, le=UPPER_BOUND_MAX_PARALLELISM)]] = Field(
        default_factory=dict, max_length=1024,
        description="Parallelism of JobVertices by their id (status.plan.jobVertices), set "
        "after chaining (Flink's pipeline.jobvertex-parallelism-overrides): every operator "
        "of the chain takes it. The autoscaler sets its decisions here in the job it runs.")

    suspend: bool = Field(
        default=False, description="Stop the job's pods and keep the resource (SUSPENDED)."
    )
    job: JobLifecycleSpec = Field(
        default_factory=JobLifecycleSpec,
        description="Upgrades, suspends and savepoints of a continuous job.")
    ttl_seconds_after_finished: int | None = Field(
        default=None, ge=0, le=366 * 24 * 3600,
        description="Seconds after the job ended (FINISHED, FAILED or CANCELED) when its "
        "driver and executor pods are deleted; the DataflowJob and its status stay. Unset: "
        "they stay until the job is deleted.",
    )
    restart_strategy: RestartStrategySpec = Field(
        default_factory=RestartStrategySpec, description="Restarts after a driver failure."
    )
    image: str | None = Field(
        default=None, description="Container image of driver and executors (operator default)."
    )
    spark_conf: dict[str, SettingValue] = Field(
        default_factory=dict, description="Extra Spark configuration for the driver. A value "
        "may be {secretKeyRef: {name, key}}: a key of a Secret in the job's namespace, which "
        "the driver reads at its start and no file or status shows."
    )
    driver: DriverSpec = Field(
        default_factory=DriverSpec, description="Resources of the driver pod."
    )
    service_account_name: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$",
        description="Run the driver as this existing service account of the job's namespace; "
        "only one the operator allows (`dataflow operator --allow-service-account`). Default: "
        "an account of the job's own that may manage its executors and nothing else.",
    )
    pod_template: PodTemplatesSpec | None = Field(
        default=None, description="Overrides merged into the driver and executor pods."
    )
    py_files: list[PyFileSpec] = Field(
        default_factory=list, max_length=32,
        description="User code for the job's functions, shipped with Spark's py-files "
        "mechanism.")
    requirements: list[Annotated[str, Field(min_length=1, max_length=512,
                                            pattern=r"^[^-\s][^\n]*$")]] = Field(
        default_factory=list, max_length=64,
        description="pip requirements (e.g. 'humanize==4.9.0', or a wheel's path on a volume) "
        "installed into a virtual environment of the job's own when the driver and each "
        "executor start; the image's packages stay visible beneath them. No pip options.")
    requirements_cache_dir: str | None = Field(
        default=None, pattern=r"^/[^\n]*$",
        description="Where those environments are kept, e.g. on a volume the pod templates "
        "mount, so that later runs reuse them. Default: a directory in the pod's /tmp.")

    def group_resources(self) -> dict[str, SlotSharingGroupSpec]:
        """Declared groups, plus the implicit ``default`` group when it is not declared."""
        groups = {g.name: g for g in self.slot_sharing_groups}
        groups.setdefault(
            DEFAULT_SLOT_SHARING_GROUP, SlotSharingGroupSpec(name=DEFAULT_SLOT_SHARING_GROUP)
        )
        return groups


class ObjectMeta(BaseModel):
    """The part of Kubernetes metadata a manifest needs; the rest passes through untouched."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=JOB_NAME_PATTERN, description="Lower-case DNS label, <= 52 chars.")
    namespace: str | None = None


class DataflowJob(BaseModel):
    """A whole DataflowJob manifest."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    api_version: str = Field(default=f"{API_GROUP}/{API_VERSION}", alias="apiVersion")
    kind: str = KIND
    metadata: ObjectMeta
    spec: DataflowJobSpec

    @model_validator(mode="after")
    def _right_kind(self) -> DataflowJob:
        if self.api_version != f"{API_GROUP}/{API_VERSION}":
            raise ValueError(f"apiVersion must be {API_GROUP}/{API_VERSION}")
        if self.kind != KIND:
            raise ValueError(f"kind must be {KIND}")
        return self
