"""StreamExecutionEnvironment: job-wide settings and sources, and the spec they build.

The environment only records; ``build_spec()`` writes the same DataflowJob spec a manifest
holds, so running from Python (``execute``) and applying ``to_manifest()`` run the same job.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dataflow_engine.api import scripts
from dataflow_engine.api.common.execution_config import ExecutionConfig
from dataflow_engine.api.common.job_client import JobClient, new_job_id
from dataflow_engine.api.common.watermark_strategy import WatermarkStrategy
from dataflow_engine.api.datastream.connectors import (
    DataGeneratorSource,
    FileSource,
    KafkaSource,
)
from dataflow_engine.api.datastream.connectors.number_seq import (
    NumberSequenceSource,
    check_sequence,
)
from dataflow_engine.api.datastream.data_stream import DataStream
from dataflow_engine.api.transformations import (
    Input,
    Transformation,
    assign_names,
    check_count,
    check_name,
    declared_type,
    operator_data,
    reachable,
)
from dataflow_engine.compiler.compile import CompiledJob, compile_job
from dataflow_engine.compiler.manifest import dump_manifest
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError, SpecProblem
from dataflow_engine.functions import shipped
from dataflow_engine.functions.references import parse_function_ref
from dataflow_engine.render.plan_json import stream_graph_json
from dataflow_engine.runtime.jobmaster.config import JobExecutionResult
from dataflow_engine.spec.model import (
    DEFAULT_SLOT_SHARING_GROUP,
    UPPER_BOUND_MAX_PARALLELISM,
    CheckpointingMode,
    DataflowJob,
    DataflowJobSpec,
    Execution,
    ObjectMeta,
    OperatorType,
    RuntimeMode,
    WatermarkStrategyType,
    duration_millis,
    duration_text,
)
from dataflow_engine.spec.quantity import QUANTITY_PATTERN
from dataflow_engine.types.convert import element_converter
from dataflow_engine.types.json_form import to_json

_DEFAULT_MAX_PARALLELISM: int = DataflowJobSpec.model_fields["max_parallelism"].default
_DEFAULT_EPOCH_INTERVAL_MS = duration_millis(DataflowJobSpec.model_fields["epoch_interval"].default)

#: Job name of :meth:`StreamExecutionEnvironment.execute` when none is given.
DEFAULT_JOB_NAME = "dataflow-job"


class CheckpointConfig:
    """Flink's CheckpointConfig: where checkpoints go and how they may fail."""

    def __init__(self) -> None:
        self.interval: int | None = None
        self.mode = CheckpointingMode.EXACTLY_ONCE
        self._storage: str | None = None
        self._min_pause: int | None = None
        self._timeout: int | None = None
        self._tolerable: int | None = None

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        """A directory on a volume the driver mounts (absolute, or a ``file:`` URI)."""
        self._storage = checkpoint_path
        return self

    def set_min_pause_between_checkpoints(self, min_pause_between_checkpoints: int
                                          ) -> CheckpointConfig:
        self._min_pause = min_pause_between_checkpoints
        return self

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        self._timeout = check_count(checkpoint_timeout, "checkpoint timeout")
        return self

    def set_tolerable_checkpoint_failure_number(self, number: int) -> CheckpointConfig:
        self._tolerable = number
        return self

    def is_checkpointing_enabled(self) -> bool:
        return self.interval is not None

    def spec_data(self) -> dict[str, Any] | None:
        if self.interval is None:
            return None
        data: dict[str, Any] = {"interval": duration_text(self.interval),
                                "mode": self.mode.value}
        optional = (("storage", self._storage),
                    ("minPause", None if self._min_pause is None
                     else duration_text(self._min_pause)),
                    ("timeout", None if self._timeout is None else duration_text(self._timeout)),
                    ("tolerableFailedCheckpoints", self._tolerable))
        data.update((key, value) for key, value in optional if value is not None)
        return data


class StreamExecutionEnvironment:
    """Where a job is defined: settings, sources, and the spec built from every stream."""

    def __init__(self) -> None:
        self._transformations: list[Transformation] = []
        #: Transformation ids go on after execute() cleared the list: a new sink may still
        #: reach the transformations of streams made before, which keep theirs.
        self._transformation_ids = itertools.count(1)
        self._parallelism: int | None = None
        self._max_parallelism: int | None = None
        #: Flink's default ``execution.runtime-mode`` (a manifest's default is AUTOMATIC).
        self._runtime_mode = RuntimeMode.STREAMING
        self._chaining = True
        self._config = ExecutionConfig()
        self._checkpoint_config = CheckpointConfig()
        self._slots_per_executor: int | None = None
        self._slot_sharing_groups: dict[str, dict[str, str]] = {}
        self._py_files: list[dict[str, str]] = []
        self._requirements: list[str] = []
        self._requirements_cache_dir: str | None = None
        self._default_local_parallelism: int | None = None
        #: Spark settings of a run from here (set_python_executable, add_python_archive).
        self._spark_conf: dict[str, str] = {}
        #: set_buffer_timeout's milliseconds: the epoch interval (None: the spec's default).
        self._buffer_timeout: int | None = None
        self._execution: Execution | None = None

    @staticmethod
    def get_execution_environment() -> StreamExecutionEnvironment:
        """A new, empty environment (each job gets its own)."""
        return StreamExecutionEnvironment()

    # -- job-wide settings -----------------------------------------------------------------

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        """Parallelism of every operator that sets none; applies whenever it is called."""
        self._parallelism = check_count(parallelism, "parallelism")
        return self

    def get_parallelism(self) -> int:
        """The parallelism set, else the default local parallelism (a manifest built without
        one gets the spec's default, 1)."""
        return self._parallelism or self.get_default_local_parallelism()

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        """Default number of key groups: how far keyed operators can be rescaled."""
        self._max_parallelism = check_count(max_parallelism, "max parallelism",
                                            UPPER_BOUND_MAX_PARALLELISM)
        return self

    def get_max_parallelism(self) -> int:
        return self._max_parallelism or _DEFAULT_MAX_PARALLELISM

    def set_runtime_mode(self, execution_mode: RuntimeMode | str) -> StreamExecutionEnvironment:
        """STREAMING (the default, as in Flink), BATCH, or AUTOMATIC (BATCH when every
        source is bounded)."""
        self._runtime_mode = RuntimeMode(execution_mode)
        return self

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        """Every operator becomes its own task: easier to observe, slower to run."""
        self._chaining = False
        return self

    def is_chaining_enabled(self) -> bool:
        return self._chaining

    def enable_checkpointing(self, interval: int,
                             mode: CheckpointingMode | str | None = None
                             ) -> StreamExecutionEnvironment:
        """Checkpoints every ``interval`` ms (Flink's ``enableCheckpointing``); where they
        are kept and how they fail is set on :meth:`get_checkpoint_config`."""
        self._checkpoint_config.interval = check_count(interval, "checkpoint interval")
        if mode is not None:
            self._checkpoint_config.mode = CheckpointingMode(mode)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return self._checkpoint_config

    def get_config(self) -> ExecutionConfig:
        return self._config

    def set_buffer_timeout(self, timeout_millis: int) -> StreamExecutionEnvironment:
        """Flink's latency knob, how long a record may wait in an output buffer
        (spec.epochInterval). A PIPELINED job's tasks flush their buffers that often (and
        whenever they run out of input), its sources get new input that often; an EPOCHS job
        crosses the plan in epochs, so it sets how often they do: 100 is an epoch every
        100 ms, 0 epochs back to back (Flink: a flush after every record), -1 the spec's
        default interval (Flink: flush only full buffers)."""
        if isinstance(timeout_millis, bool) or not isinstance(timeout_millis, int) \
                or timeout_millis < -1:
            raise ValueError(f"set_buffer_timeout: {timeout_millis!r} must be -1 (buffers "
                             "flushed when full) or a number of milliseconds >= 0")
        self._buffer_timeout = None if timeout_millis == -1 else timeout_millis
        return self

    def get_buffer_timeout(self) -> int:
        """The epoch interval in milliseconds (the spec's default, 1 s, unless set)."""
        if self._buffer_timeout is not None:
            return self._buffer_timeout
        return _DEFAULT_EPOCH_INTERVAL_MS

    def set_execution(self, execution: Execution | str) -> StreamExecutionEnvironment:
        """How a continuous job runs on Spark (spec.execution, not in PyFlink): EPOCHS, a
        Spark job per epoch, or PIPELINED, tasks that live as long as the job, as Flink's do
        (then the buffer timeout is Flink's own)."""
        try:
            self._execution = Execution(str(execution).upper())
        except ValueError:
            raise ValueError(f"set_execution: {execution!r} is not one of "
                             f"{', '.join(e.value for e in Execution)}") from None
        return self

    def set_slots_per_executor(self, slots: int) -> StreamExecutionEnvironment:
        """Slots per Spark executor (Flink's taskmanager.numberOfTaskSlots)."""
        self._slots_per_executor = check_count(slots, "slots per executor")
        return self

    def register_slot_sharing_group(self, name: str, cpu: str | float = "1",
                                    memory: str = "1Gi") -> StreamExecutionEnvironment:
        """Resources of ONE slot of a group; registering a name again replaces them."""
        check_name(name, "slot sharing group")
        resources = {"cpu": str(cpu), "memory": str(memory)}
        for field, value in resources.items():
            if not re.match(QUANTITY_PATTERN, value):
                raise ValueError(f"slot sharing group {name!r}: {field} {value!r} is not a "
                                 "Kubernetes quantity such as '500m', '2' or '4Gi'")
        self._slot_sharing_groups[name] = resources
        return self

    def add_python_file(self, file_path: str) -> StreamExecutionEnvironment:
        """A .py, .zip or .egg for the Python path of the driver and every executor, as in
        PyFlink: an https URL, or an absolute path where the driver runs (a volume in its pod).
        A ConfigMap is named in the manifest (spec.pyFiles)."""
        source = "url" if file_path.startswith("https://") else "path"
        if source == "path" and not file_path.startswith("/"):
            raise ValueError(f"add_python_file: {file_path!r} must be an absolute path (where "
                             "the driver runs) or an https URL")
        self._py_files.append({source: file_path})
        return self

    def set_python_requirements(self, requirements_file_path: str | os.PathLike[str],
                                requirements_cache_dir: str | None = None
                                ) -> StreamExecutionEnvironment:
        """pip requirements the driver and the executors install into the job's own
        environment (read from the file now: they travel in the manifest), as in PyFlink."""
        lines = Path(requirements_file_path).read_text().splitlines()
        self._requirements = [line.strip() for line in lines
                              if line.strip() and not line.lstrip().startswith("#")]
        self._requirements_cache_dir = requirements_cache_dir
        return self

    # -- sources ---------------------------------------------------------------------------

    def from_collection(self, collection: Iterable[Any], type_info: object = None) -> DataStream:
        """A bounded source of the given elements, with parallelism 1 as in Flink.

        The elements travel inside the spec (and the manifest). With ``type_info`` they are
        converted to it now, as PyFlink converts them (a row from a tuple, a dict or a Row;
        FLOAT to 32 bits...), and written in the type's JSON form. Without, JSON values are
        written as they are (a collection of tuples stays tuples), and any other Python objects
        (a Row, a Decimal...) stay in the program, as PyFlink pickles them: such a job runs
        from Python and has no manifest.
        """
        declared = declared_type(type_info, "type_info")
        given = list(collection)
        args: dict[str, Any]
        if declared is not None:
            convert = element_converter(declared)
            args = {"elements": [to_json(_converted(convert, e, i), declared)
                                 for i, e in enumerate(given)]}
        elif all(_is_json(e) for e in given):
            args = {"elements": [to_json(element, None) for element in given]}
            if given and all(type(e) is tuple for e in given):
                args["tuples"] = True  # records stay tuples, as PyFlink keeps them
        else:  # Python objects, as PyFlink pickles them: the job runs from here only
            args = {"shippedElements": shipped.register(_Elements(given), _NOT_JSON)}
        source = self._add(OperatorType.COLLECTION, args=args)
        source.parallelism = 1
        source.output_type = declared
        return DataStream(self, source)

    def from_sequence(self, start: int, end: int) -> DataStream:
        """The numbers from ``start`` to ``end``, both inclusive, split across subtasks."""
        check_sequence(start, end, "from_sequence")
        return DataStream(self, self._add(OperatorType.SEQUENCE,
                                          args={"from": start, "to": end}))

    def from_source(self, source: DataGeneratorSource | FileSource | KafkaSource
                    | NumberSequenceSource,
                    watermark_strategy: WatermarkStrategy | None = None,
                    source_name: str | None = None) -> DataStream:
        """A source connector's stream (Flink's ``fromSource``). A strategy with a timestamp
        assigner stamps its records (its ``no_watermarks()``: none); for a KafkaSource, any
        strategy but ``no_watermarks()`` stamps them, by default with their Kafka
        timestamps."""
        if isinstance(source, KafkaSource):
            kafka = self._add(OperatorType.KAFKA, args=source.spec_args())
            kafka.output_type = source.record_type
            stream = DataStream(self, kafka)
            stamps = watermark_strategy is not None and (
                watermark_strategy.type is not WatermarkStrategyType.NO_WATERMARKS
                or watermark_strategy.timestamp_assigner is not None)
        elif isinstance(source, DataGeneratorSource | FileSource | NumberSequenceSource):
            if isinstance(source, DataGeneratorSource):
                added = self._add(OperatorType.DATAGEN, function=source.function,
                                  args=source.spec_args())
            elif isinstance(source, FileSource):
                added = self._add(OperatorType.TEXT, args=source.spec_args())
            else:
                added = self._add(OperatorType.SEQUENCE, args=source.spec_args())
            stream = DataStream(self, added)
            stamps = (watermark_strategy is not None
                      and watermark_strategy.timestamp_assigner is not None)
        else:
            raise TypeError(f"from_source() takes a DataGeneratorSource, FileSource, "
                            f"KafkaSource or NumberSequenceSource, not {type(source).__name__}")
        if source_name is not None:
            stream = stream.name(source_name)
        if stamps:
            assert watermark_strategy is not None
            stream = stream._stamped(watermark_strategy)
        return stream

    def read_text_file(self, file_path: str | os.PathLike[str] | Sequence[str]) -> DataStream:
        """Lines of a file, a directory or a glob (or a list of them), read by the executors."""
        if isinstance(file_path, str | os.PathLike):
            path: str | list[str] = os.fspath(file_path)
        else:
            path = [os.fspath(p) for p in file_path]
        return DataStream(self, self._add(OperatorType.TEXT, args={"path": path}))

    # -- the spec and what is built from it -------------------------------------------------

    def build_spec(self) -> DataflowJobSpec:
        """The DataflowJob spec of every stream defined so far; raises SpecError if invalid."""
        operators = reachable(self._transformations)
        if not operators:
            raise SpecError.single("spec.pipeline", "no operators are defined: add a sink, "
                                   "e.g. env.from_collection([...]).print()")
        names = assign_names(operators)
        data: dict[str, Any] = {
            "chaining": self._chaining,
            "objectReuse": self._config.is_object_reuse_enabled(),
            "pipeline": [operator_data(op, names) for op in operators],
        }
        settings = (("parallelism", self._parallelism),
                    ("maxParallelism", self._max_parallelism),
                    ("runtimeMode", self._runtime_mode),
                    ("slotsPerExecutor", self._slots_per_executor),
                    ("execution", self._execution))
        data.update((key, value) for key, value in settings if value is not None)
        interval = self._config._auto_watermark_interval
        if interval is not None:
            data["autoWatermarkInterval"] = duration_text(interval)
        if self._buffer_timeout is not None:
            data["epochInterval"] = duration_text(self._buffer_timeout)
        checkpointing = self._checkpoint_config.spec_data()
        if checkpointing is not None:
            data["checkpointing"] = checkpointing
        groups = self._group_data(operators)
        if groups:
            data["slotSharingGroups"] = groups
        user_code = (("pyFiles", self._py_files), ("requirements", self._requirements),
                     ("requirementsCacheDir", self._requirements_cache_dir))
        data.update((key, value) for key, value in user_code if value)
        return parse_spec(data)

    def build_job(self, name: str) -> DataflowJob:
        """The whole DataflowJob resource, named ``name``."""
        return _job(self.build_spec(), name)

    def to_manifest(self, name: str) -> str:
        """The DataflowJob as YAML, for GitOps; compiled first, so it is known to compile.
        Functions shipped by value (lambdas, closures: they run from Python) cannot be in a
        manifest; each one is reported with its operator."""
        return manifest_of(self.build_spec(), name)

    def compile(self, job_name: str = DEFAULT_JOB_NAME) -> CompiledJob:
        """The job through all graph layers (StreamGraph to slot plan); runs nothing."""
        return compile_job(self.build_spec(), job_name)

    def execute(self, job_name: str = DEFAULT_JOB_NAME) -> JobExecutionResult:
        """Compiles and runs the job on Spark; returns its JobExecutionResult once the job
        FINISHED, and raises its JobExecutionError, naming the cause, if it did not.

        As in PyFlink, what the job ran is cleared: a second execute() runs the sinks added
        since (and what they read), not the first job's again. Without set_parallelism() the
        job runs with the default local parallelism (the machine's cores), as PyFlink's
        local execution does.
        """
        result: JobExecutionResult = self._submit(job_name)()
        return result.check()

    def execute_async(self, job_name: str = DEFAULT_JOB_NAME) -> JobClient:
        """Starts the job on a thread of this program and returns its JobClient at once; a
        job that does not compile raises here. The program keeps running until the job ends
        (its output goes on while the program's next lines run)."""
        run = self._submit(job_name)
        client = JobClient(new_job_id())
        threading.Thread(target=client._run, name=f"dataflow-job-{job_name}", args=(
            lambda stop: run(job_id=client.get_job_id().hex, stop=stop,
                             status_listener=client._observe),)).start()
        return client

    def get_execution_plan(self) -> str:
        """The StreamGraph as JSON (``dataflow compile --layer stream --format json``), with
        the parallelism execute() would give it; clears nothing."""
        return json.dumps(stream_graph_json(self._local_job(DEFAULT_JOB_NAME).stream_graph),
                          indent=2)

    def get_default_local_parallelism(self) -> int:
        """The parallelism a job run from here gets without set_parallelism(): the cores
        this process may use, as Flink's local environment does (or ``dataflow run -p``)."""
        return (self._default_local_parallelism or scripts.DEFAULT_PARALLELISM.get()
                or _cores())

    def set_default_local_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        self._default_local_parallelism = check_count(parallelism, "default local parallelism")
        return self

    def add_jars(self, *jars_path: str) -> StreamExecutionEnvironment:
        """Accepted and not needed: the connectors are part of the engine (no Java jars are
        loaded)."""
        _not_needed("add_jars()", "the connectors are part of the engine")
        return self

    def add_classpaths(self, *classpaths: str) -> StreamExecutionEnvironment:
        """Accepted and not needed, as add_jars()."""
        _not_needed("add_classpaths()", "the connectors are part of the engine")
        return self

    def set_python_executable(self, python_exec: str) -> StreamExecutionEnvironment:
        """The Python the executors run when the job runs from here (Spark's
        ``spark.pyspark.python``); a deployed job runs the image's Python."""
        self._spark_conf["spark.pyspark.python"] = python_exec
        return self

    def add_python_archive(self, archive_path: str, target_dir: str | None = None
                           ) -> StreamExecutionEnvironment:
        """An archive unpacked in every executor's working directory (as ``target_dir``, else
        its file name) when the job runs from here (Spark's ``spark.archives``)."""
        entry = archive_path if target_dir is None else f"{archive_path}#{target_dir}"
        archives = self._spark_conf.get("spark.archives")
        self._spark_conf["spark.archives"] = f"{archives},{entry}" if archives else entry
        return self

    def close(self) -> None:
        """Nothing to release: each execute() starts and stops its own Spark session."""

    # -- internals -------------------------------------------------------------------------

    def _local_job(self, job_name: str) -> CompiledJob:
        """The job as execute() runs it: the default local parallelism where none is set."""
        spec = self.build_spec()
        if self._parallelism is None:
            parallelism = min(self.get_default_local_parallelism(), spec.max_parallelism)
            spec = parse_spec({**spec.model_dump(by_alias=True, exclude_unset=True),
                               "parallelism": parallelism})
        return compile_job(spec, job_name)

    def _submit(self, job_name: str) -> Callable[..., JobExecutionResult]:
        """Compiles the job and clears what it will run; returns what runs it, taking
        RunnerConfig settings (beyond those of ``dataflow run`` for a script it runs). The
        runtime is imported only here, so defining jobs never needs Spark installed."""
        compiled = self._local_job(job_name)
        if scripts.CAPTURING.get():
            raise scripts.JobCaptured(compiled)  # dataflow compile: the job, not its run
        self._transformations.clear()
        runtime = importlib.import_module("dataflow_engine.runtime")
        command = dict(scripts.RUNNER_SETTINGS.get() or {})
        files = [*command.pop("py_files", []),
                 *(entry.get("path") or entry["url"] for entry in self._py_files)]
        spark_conf = {**command.pop("spark_conf", {}), **self._spark_conf}

        def run(**settings: Any) -> JobExecutionResult:
            config = runtime.RunnerConfig(py_files=files, spark_conf=spark_conf,
                                          **{**command, **settings})
            result: JobExecutionResult = runtime.run_job(compiled, config)
            return result

        return run

    def _add(self, operator_type: OperatorType, inputs: list[Input] | None = None,
             function: str | None = None, args: Mapping[str, Any] | None = None
             ) -> Transformation:
        transformation = Transformation(next(self._transformation_ids), operator_type,
                                        list(inputs or []), function, dict(args or {}))
        self._transformations.append(transformation)
        return transformation

    def _group_data(self, operators: list[Transformation]) -> list[dict[str, str]]:
        """Registered groups, plus groups operators name without registering (default size)."""
        groups = {name: {"name": name, **resources}
                  for name, resources in self._slot_sharing_groups.items()}
        for op in operators:
            group = op.slot_sharing_group
            if group is not None and group != DEFAULT_SLOT_SHARING_GROUP:
                groups.setdefault(group, {"name": group})
        return list(groups.values())


def _cores() -> int:
    """The cores this process may run on (Java's availableProcessors)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def _not_needed(call: str, why: str) -> None:
    warnings.warn(f"{call} is accepted and not needed here: {why}", stacklevel=3)


def _converted(convert: Callable[[Any], Any], element: Any, index: int) -> Any:
    """An element as its declared type makes it; the error names the element."""
    try:
        return convert(element)
    except (TypeError, ValueError, OverflowError, KeyError) as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"from_collection: element {index} {element!r}: {exc}") from exc


#: Why a collection of Python objects cannot be in a manifest (to_manifest's error).
_NOT_JSON = ("from_collection() was given elements that are not JSON values (a Row, a Decimal, "
             "bytes...) and no type_info, so they can only run from Python; give type_info, "
             "or elements of JSON values")


class _Elements(list[Any]):
    """A collection's elements kept by the program (``shippedElements``)."""

    __name__ = "elements"


def _is_json(value: object) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


def _job(spec: DataflowJobSpec, name: str) -> DataflowJob:
    try:
        metadata = ObjectMeta(name=name)
    except ValueError:
        raise SpecError.single("metadata.name", f"{name!r} is not a valid job name: use "
                               "1-63 letters, digits, '-', '_' or '.'") from None
    return DataflowJob(metadata=metadata, spec=spec)


def manifest_of(spec: DataflowJobSpec, name: str) -> str:
    """The DataflowJob ``name`` of a spec the API built, as YAML, once it compiles and names
    every function (see ``to_manifest()``)."""
    job = _job(spec, name)
    problems = [SpecProblem(path, f"operator {operator}: {shipped.REASONS[reference]}")
                for path, operator, reference in _shipped_references(spec)]
    if problems:
        raise SpecError(problems)
    compile_job(spec, name)
    return dump_manifest(job)


def _shipped_references(spec: DataflowJobSpec) -> Iterator[tuple[str, str, str]]:
    """``(field, operator name, shipped function's name)`` of every function shipped by value."""
    for index, operator in enumerate(spec.pipeline):
        if shipped.is_shipped(operator.function):
            assert operator.function is not None
            yield (f"spec.pipeline[{index}].function", repr(operator.name),
                   parse_function_ref(operator.function).attribute)
        strategy = operator.watermark_strategy
        if strategy is not None and shipped.is_shipped(strategy.generator):
            assert strategy.generator is not None
            yield (f"spec.pipeline[{index}].watermarkStrategy.generator", repr(operator.name),
                   parse_function_ref(strategy.generator).attribute)
        elements = operator.args.get("shippedElements")
        if operator.type is OperatorType.COLLECTION and isinstance(elements, str):
            yield (f"spec.pipeline[{index}].args.shippedElements", repr(operator.name),
                   parse_function_ref(elements).attribute)
        for number, edge in enumerate(operator.inputs):
            if shipped.is_shipped(edge.key_by):
                assert isinstance(edge.key_by, str)
                yield (f"spec.pipeline[{index}].inputs[{number}].keyBy", repr(operator.name),
                       parse_function_ref(edge.key_by).attribute)
