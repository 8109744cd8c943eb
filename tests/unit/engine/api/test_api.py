"""The Python API builds exactly the spec a manifest would hold, with PyFlink's names."""

from __future__ import annotations

import functools
import importlib
import json
import re
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import api_fns
import pytest

from dataflow_engine.api import (
    CollectSink,
    DataStream,
    DiscardingSink,
    FileSink,
    KeyedStream,
    RuntimeExecutionMode,
    RuntimeMode,
    StreamExecutionEnvironment,
)
from dataflow_engine.api.common import Row
from dataflow_engine.compiler.compile import CompiledJob, compile_job
from dataflow_engine.compiler.manifest import load_manifest, load_manifest_text
from dataflow_engine.errors import SpecError
from dataflow_engine.functions import library
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.spec.model import (
    NAME_PATTERN,
    DataflowJobSpec,
    Execution,
    OperatorSpec,
    Partitioning,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples"


def _env() -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment()


def _op(spec: DataflowJobSpec, name: str) -> OperatorSpec:
    return next(op for op in spec.pipeline if op.name == name)


def _numbers(env: StreamExecutionEnvironment) -> DataStream:
    return env.from_sequence(1, 10).name("src")


# -- the environment -------------------------------------------------------------------------


def test_environment_settings_become_spec_settings() -> None:
    env = _env()
    assert env.set_parallelism(3) is env
    env.set_max_parallelism(64).set_runtime_mode(RuntimeMode.BATCH).disable_operator_chaining()
    env.set_slots_per_executor(4).register_slot_sharing_group("heavy", cpu="2", memory="4Gi")
    assert env.get_config().enable_object_reuse().is_object_reuse_enabled()
    _numbers(env).print()
    assert env.build_spec().execution is Execution.EPOCHS
    env.set_execution("pipelined")
    spec = env.build_spec()
    assert spec.execution is Execution.PIPELINED
    assert (spec.parallelism, spec.max_parallelism, spec.runtime_mode) == (3, 64, RuntimeMode.BATCH)
    assert (spec.chaining, spec.object_reuse, spec.slots_per_executor) == (False, True, 4)
    assert [(g.name, g.cpu, g.memory) for g in spec.slot_sharing_groups] == [("heavy", "2", "4Gi")]
    assert (env.get_parallelism(), env.get_max_parallelism(), env.is_chaining_enabled()) == (
        3, 64, False)
    env.get_config().disable_object_reuse()
    assert env.build_spec().object_reuse is False


def test_defaults_are_the_spec_defaults() -> None:
    env = _env()
    # a job run from here gets the cores, as in PyFlink; its manifest the spec's default
    assert env.get_parallelism() == env.get_default_local_parallelism() >= 1
    assert env.set_default_local_parallelism(3).get_parallelism() == 3
    assert env.get_max_parallelism() == 128
    _numbers(env).print()
    spec = env.build_spec()
    # STREAMING is Flink's default runtime mode (a manifest's own default is AUTOMATIC)
    assert spec == DataflowJobSpec.model_validate({"runtimeMode": "STREAMING", "pipeline": [
        op.model_dump(by_alias=True) for op in spec.pipeline]})


def test_the_buffer_timeout_is_the_epoch_interval() -> None:
    env = _env()
    assert env.get_buffer_timeout() == 1000  # the spec's default interval, 1 s
    _numbers(env).print()
    assert env.set_buffer_timeout(100) is env
    assert (env.build_spec().epoch_interval, env.get_buffer_timeout()) == ("100ms", 100)
    assert env.set_buffer_timeout(0).build_spec().epoch_interval == "0ms"  # back to back
    assert env.set_buffer_timeout(-1).build_spec().epoch_interval == "1s"


def test_runtime_mode_accepts_pyflink_alias_and_text() -> None:
    assert RuntimeExecutionMode is RuntimeMode
    env = _env().set_runtime_mode("STREAMING")
    _numbers(env).print()
    assert env.build_spec().runtime_mode is RuntimeMode.STREAMING


@pytest.mark.parametrize(("call", "error"), [
    (lambda env: env.set_parallelism(0), ValueError),
    (lambda env: env.set_parallelism(True), TypeError),
    (lambda env: env.set_max_parallelism(1 << 16), ValueError),
    (lambda env: env.set_slots_per_executor(0), ValueError),
    (lambda env: env.set_runtime_mode("FAST"), ValueError),
    (lambda env: env.register_slot_sharing_group("bad name"), ValueError),
    (lambda env: env.register_slot_sharing_group("g", cpu="lots"), ValueError),
    (lambda env: env.from_sequence(5, 1), ValueError),
    (lambda env: env.set_buffer_timeout(-2), ValueError),
    (lambda env: env.set_buffer_timeout(1.5), ValueError),
    (lambda env: env.set_execution("CONTINUOUS"), ValueError),
])
def test_bad_settings_fail_at_the_call(call: Callable[[StreamExecutionEnvironment], Any],
                                       error: type[Exception]) -> None:
    with pytest.raises(error):
        call(_env())


def test_sources() -> None:
    env = _env().set_parallelism(4)
    env.from_collection([("a", 1), {"k": [1, 2.5, None, True]}]).name("coll").print()
    env.from_sequence(0, 9).name("seq").print()
    env.read_text_file("/data/in.txt").name("one").print()
    env.read_text_file(Path("/data")).name("dir").print()
    env.read_text_file(["/a/*.txt", "/b"]).name("many").print()
    spec = env.build_spec()
    coll = _op(spec, "coll")
    # Tuples become lists: Python and the manifest must hand executors the same records.
    assert coll.type == "collection" and coll.parallelism == 1
    assert coll.args == {"elements": [["a", 1], {"k": [1, 2.5, None, True]}]}
    assert (_op(spec, "seq").args, _op(spec, "seq").parallelism) == ({"from": 0, "to": 9}, None)
    assert _op(spec, "one").args == {"path": "/data/in.txt"}
    assert _op(spec, "dir").args == {"path": "/data"}
    assert _op(spec, "many").args == {"path": ["/a/*.txt", "/b"]}


def test_elements_that_are_not_json_stay_in_the_program_and_have_no_manifest() -> None:
    env = _env()
    elements = [Row(id=1, name="x"), {1: "a"}, b"raw"]
    env.from_collection(elements).name("objects").print()
    spec = env.build_spec()
    (reference,) = _op(spec, "objects").args.values()
    plan = plan_job(compile_job(spec, "objects"))
    source = next(o for v in plan.vertices.values() for o in v.descriptor.operators
                  if o.name == "objects")
    assert [r for split in source.splits for r in split] == elements  # type: ignore[union-attr]
    with pytest.raises(SpecError) as refused:
        env.to_manifest("objects")
    assert str(refused.value.problems[0]).startswith(
        "spec.pipeline[0].args.shippedElements: operator 'objects': from_collection() was given "
        "elements that are not JSON values")
    assert reference.startswith("dataflow_engine.functions.shipped:")


def test_names_are_labels_in_pyflink_and_identifiers_here() -> None:
    env = _env()
    source = env.from_collection([1]).name("Collection Source")
    source.map(api_fns.double).name("-double it!").print().name("kafka sink")
    assert [op.name for op in env.build_spec().pipeline] == [
        "Collection-Source", "double-it", "kafka-sink"]


def test_a_job_without_operators_is_reported() -> None:
    env = _env()
    env.from_sequence(1, 2)  # a source nobody reads is dropped, as in Flink
    with pytest.raises(SpecError, match="no operators are defined"):
        env.build_spec()


def test_a_job_without_a_sink_is_reported() -> None:
    env = _env()
    _numbers(env).map(api_fns.double)
    with pytest.raises(SpecError, match="the pipeline has no sink"):
        env.build_spec()


# -- operators and functions ---------------------------------------------------------------


def test_transformations_and_function_references() -> None:
    env = _env()
    words = env.from_collection(["a b"]).name("lines").flat_map("split_words").name("fm")
    words.map(api_fns.first_letter).name("m").filter("api_fns:positive").name("f").print()
    words.flat_map(api_fns.Tokenizer).name("cls").print()
    words.map(library.upper).name("builtin").print()
    # A built-in that does not fit the operator is still shippable by its module path.
    words.map(library.add).name("misfit").print()
    spec = env.build_spec()
    assert [(op.name, op.type.value, op.inputs[0].from_ if op.inputs else None)
            for op in spec.pipeline[:4]] == [
        ("lines", "collection", None), ("fm", "flat_map", "lines"), ("m", "map", "fm"),
        ("f", "filter", "m")]
    assert _op(spec, "fm").function == "split_words"
    assert _op(spec, "m").function == "api_fns:first_letter"
    assert _op(spec, "f").function == "api_fns:positive"
    assert _op(spec, "cls").function == "api_fns:Tokenizer"
    assert _op(spec, "builtin").function == "upper"
    assert _op(spec, "misfit").function == "dataflow_engine.functions.library:add"


def test_keyed_operators_read_their_input_by_key() -> None:
    env = _env()
    pairs = env.from_collection([["a", 1]]).name("src")
    keyed = pairs.key_by(0)
    assert isinstance(keyed, KeyedStream)
    keyed.reduce(library.sum_counts).name("reduce").print()
    keyed.sum(1).name("sum").print()
    pairs.key_by("word").min("count").name("min").print()
    pairs.key_by(api_fns.first_letter).max().name("max").print()
    pairs.key_by(library.identity).process(api_fns.keep_latest).name("process").print()
    pairs.key_by("api_fns:first_letter").map(api_fns.double).name("map").print()
    keyed.flat_map(api_fns.explode).name("flat").print()
    keyed.filter(api_fns.positive).name("filter").print()
    keyed.print().name("printed")
    spec = env.build_spec()
    expected = {
        "reduce": ("reduce", 0, "sum_counts", {}),
        "sum": ("sum", 0, None, {"field": 1}),
        "min": ("min", "word", None, {"field": "count"}),
        "max": ("max", "api_fns:first_letter", None, {"field": 0}),
        "process": ("process", "dataflow_engine.functions.library:identity",
                    "api_fns:keep_latest", {}),
        "map": ("map", "api_fns:first_letter", "api_fns:double", {}),
        "flat": ("flat_map", 0, "api_fns:explode", {}),
        "filter": ("filter", 0, "api_fns:positive", {}),
        "printed": ("print", 0, None, {}),
    }
    for name, (kind, key, function, args) in expected.items():
        op = _op(spec, name)
        assert (op.type.value, op.inputs[0].key_by, op.function, op.args) == (
            kind, key, function, args), name
        assert op.inputs[0].from_ == "src" and op.inputs[0].partitioning is None
    env.compile()


@pytest.mark.parametrize(("call", "error"), [
    (lambda s: s.key_by(True), TypeError),
    (lambda s: s.key_by(-1), ValueError),
    (lambda s: s.key_by(0).sum(-1), ValueError),
    (lambda s: s.key_by(0).sum(1.5), TypeError),
    (lambda s: s.map(3), TypeError),
    (lambda s: s.sink_to("stdout"), TypeError),
    (lambda s: s.union(object()), TypeError),
    (lambda s: s.union(_numbers(_env())), ValueError),
])
def test_bad_operator_calls_fail_at_the_call(call: Callable[[DataStream], Any],
                                             error: type[Exception]) -> None:
    with pytest.raises(error):
        call(_numbers(_env()))


# -- partitioning and union ------------------------------------------------------------------


@pytest.mark.parametrize(("method", "partitioning"), [
    ("rebalance", Partitioning.REBALANCE),
    ("rescale", Partitioning.RESCALE),
    ("shuffle", Partitioning.SHUFFLE),
    ("broadcast", Partitioning.BROADCAST),
    ("forward", Partitioning.FORWARD),
    ("global_", Partitioning.GLOBAL),
])
def test_partitioning_goes_on_the_next_consumers_input(method: str,
                                                      partitioning: Partitioning) -> None:
    env = _env()
    src = _numbers(env)
    getattr(src, method)().map(api_fns.double).name("after").print().name("out")
    src.map(api_fns.double).name("plain").print()
    spec = env.build_spec()
    after = _op(spec, "after").inputs[0]
    assert (after.from_, after.partitioning, after.key_by) == ("src", partitioning, None)
    assert _op(spec, "plain").inputs[0].partitioning is None
    assert _op(spec, "out").inputs[0].partitioning is None
    assert not _op(spec, "src").inputs
    env.compile()


def test_the_partitioning_closest_to_the_consumer_wins() -> None:
    env = _env()
    src = _numbers(env)
    src.rebalance().shuffle().print().name("a")
    src.rebalance().key_by(0).sum(0).name("b").print()
    spec = env.build_spec()
    assert _op(spec, "a").inputs[0].partitioning is Partitioning.SHUFFLE
    b = _op(spec, "b").inputs[0]
    assert (b.partitioning, b.key_by) == (None, 0)


def test_a_keyed_stream_keeps_its_key_partitioning() -> None:
    keyed = _numbers(_env()).key_by(0)
    with pytest.raises(TypeError, match=r"cannot override partitioning of a KeyedStream"):
        keyed.rebalance()


def test_union_is_an_operator_in_the_spec_with_each_inputs_partitioning() -> None:
    env = _env()
    a = _numbers(env)
    b = env.from_sequence(20, 30).name("b")
    c = env.from_collection([1]).name("c")
    merged = a.union(b.rebalance(), c)
    merged.map(api_fns.double).name("after").print()
    a.union(b)  # never consumed: dropped, as Flink drops it
    spec = env.build_spec()
    unions = [op for op in spec.pipeline if op.type == "union"]
    assert len(unions) == 1
    assert [(i.from_, i.partitioning) for i in unions[0].inputs] == [
        ("src", None), ("b", Partitioning.REBALANCE), ("c", None)]
    assert _op(spec, "after").inputs[0].from_ == unions[0].name
    compiled = env.compile()
    assert len(compiled.stream_graph.node("after").in_edges) == 3


def test_union_of_a_keyed_stream_keeps_the_key_on_its_edge() -> None:
    env = _env()
    a = _numbers(env)
    a.key_by(0).union(env.from_sequence(1, 2).name("b")).print().name("out")
    union = next(op for op in env.build_spec().pipeline if op.type == "union")
    assert [(i.from_, i.key_by) for i in union.inputs] == [("src", 0), ("b", None)]


# -- operator settings -----------------------------------------------------------------------


def test_operator_settings_modify_the_producing_operator() -> None:
    env = _env().set_parallelism(2)
    src = _numbers(env)
    mapped = src.map(api_fns.double)
    assert (mapped.set_parallelism(4).set_max_parallelism(16).slot_sharing_group("heavy")
            .start_new_chain().disable_chaining().name("m").uid("m-v1")) is mapped
    sink = mapped.print("counts")
    assert (sink.set_parallelism(1).name("out").uid("out-v1").slot_sharing_group("io")
            .disable_chaining().set_max_parallelism(8)) is sink
    spec = env.build_spec()
    m, out = _op(spec, "m"), _op(spec, "out")
    assert (m.parallelism, m.max_parallelism, m.slot_sharing_group) == (4, 16, "heavy")
    assert (m.start_new_chain, m.disable_chaining, m.uid) == (True, True, "m-v1")
    assert (out.parallelism, out.max_parallelism, out.slot_sharing_group) == (1, 8, "io")
    assert (out.disable_chaining, out.uid, out.args) == (True, "out-v1", {"identifier": "counts"})
    # Groups named by operators but never registered are declared with default resources.
    assert [(g.name, g.cpu, g.memory) for g in spec.slot_sharing_groups] == [
        ("heavy", "1", "1Gi"), ("io", "1", "1Gi")]
    env.compile()


def test_registered_groups_keep_their_resources() -> None:
    env = _env().register_slot_sharing_group("heavy", cpu=2, memory="8Gi")
    env.register_slot_sharing_group("heavy", cpu="500m", memory="2Gi")  # replaces
    _numbers(env).slot_sharing_group("heavy").print().slot_sharing_group("default")
    groups = env.build_spec().slot_sharing_groups
    assert [(g.name, g.cpu, g.memory) for g in groups] == [("heavy", "500m", "2Gi")]


_SETTINGS: list[tuple[str, tuple[Any, ...]]] = [
    ("set_parallelism", (2,)), ("set_max_parallelism", (8,)), ("slot_sharing_group", ("g",)),
    ("start_new_chain", ()), ("disable_chaining", ()), ("name", ("x",)), ("uid", ("u",)),
]


@pytest.mark.parametrize(("method", "args"), _SETTINGS)
@pytest.mark.parametrize(("virtual", "says"), [
    (lambda s: s.rebalance(), "rebalance()"),
    (lambda s: s.global_(), "global_()"),
    (lambda s: s.union(s), "union()"),
    (lambda s: s.key_by(0), "KeyedStream"),
])
def test_settings_on_virtual_streams_are_refused(virtual: Callable[[DataStream], DataStream],
                                                 says: str, method: str,
                                                 args: tuple[Any, ...]) -> None:
    stream = virtual(_numbers(_env()))
    with pytest.raises(TypeError, match=re.escape(f"{method}() cannot be applied")) as info:
        getattr(stream, method)(*args)
    assert says in str(info.value)


@pytest.mark.parametrize(("call", "error"), [
    (lambda s: s.set_parallelism(0), ValueError),
    (lambda s: s.set_max_parallelism(40000), ValueError),
    (lambda s: s.name(" ... "), ValueError),
    (lambda s: s.name(3), TypeError),
    (lambda s: s.uid(""), ValueError),
    (lambda s: s.slot_sharing_group("a/b"), ValueError),
])
def test_bad_operator_settings_fail_at_the_call(call: Callable[[DataStream], Any],
                                                error: type[Exception]) -> None:
    with pytest.raises(error):
        call(_numbers(_env()))


# -- names -----------------------------------------------------------------------------------


def test_generated_names_are_unique_and_valid() -> None:
    env = _env()
    src = env.from_sequence(1, 5)
    src.flat_map(api_fns.explode).map(api_fns.double).print()
    spec = env.build_spec()
    assert [op.name for op in spec.pipeline] == ["sequence-1", "flat_map-2", "map-3", "print-4"]
    assert all(re.match(NAME_PATTERN, op.name) for op in spec.pipeline)


def test_renaming_after_consumers_were_attached_renames_every_reference() -> None:
    env = _env()
    src = env.from_sequence(1, 5)
    mapped = src.map(api_fns.double)
    mapped.rebalance().print()
    mapped.name("doubler")
    src.name("numbers")
    spec = env.build_spec()
    assert _op(spec, "doubler").inputs[0].from_ == "numbers"
    assert spec.pipeline[-1].inputs[0].from_ == "doubler"


def test_generated_names_avoid_explicit_ones() -> None:
    env = _env()
    env.from_sequence(1, 5).name("map-2").map(api_fns.double).print()
    assert [op.name for op in env.build_spec().pipeline] == ["map-2", "map-2-2", "print-3"]


def test_a_name_given_twice_is_numbered_as_flink_labels_may_repeat() -> None:
    env = _env()
    src = _numbers(env)
    src.map(api_fns.double).name("same").print()
    src.filter(api_fns.positive).name("same").print().name("same-2")
    src.map(api_fns.double).name("x" * 63).map(api_fns.double).name("x" * 63).print()
    names = [op.name for op in env.build_spec().pipeline]
    assert names == ["src", "same", "print-3", "same-3", "same-2", "x" * 63, "x" * 61 + "-2",
                     "print-8"]


def test_duplicate_uids_are_reported_by_validation() -> None:
    env = _env()
    src = _numbers(env)
    src.map(api_fns.double).uid("u").print()
    src.filter(api_fns.positive).uid("u").print()
    with pytest.raises(SpecError, match="duplicate uid 'u'"):
        env.build_spec()


# -- sinks -----------------------------------------------------------------------------------


def test_sinks() -> None:
    env = _env()
    src = _numbers(env)
    src.print().name("p")
    src.print("tag").name("tagged")
    src.sink_to(FileSink("/out/text")).name("text")
    src.sink_to(FileSink(Path("/out/json"), format="json")).name("json")
    src.write_as_text("/out/w").name("w")
    src.sink_to(CollectSink()).name("collect")
    src.sink_to(DiscardingSink()).name("discard")
    spec = env.build_spec()
    assert {op.name: (op.type.value, op.args) for op in spec.pipeline[1:]} == {
        "p": ("print", {}),
        "tagged": ("print", {"identifier": "tag"}),
        "text": ("file", {"path": "/out/text"}),
        "json": ("file", {"path": "/out/json", "format": "json"}),
        "w": ("file", {"path": "/out/w"}),
        "collect": ("collect", {}),
        "discard": ("discard", {}),
    }


def test_file_sink_format_is_checked() -> None:
    with pytest.raises(ValueError, match="'text' or 'json'"):
        FileSink("/out", format="csv")  # type: ignore[arg-type]


# -- manifests, compilation, execution -----------------------------------------------------


def _rich_job() -> StreamExecutionEnvironment:
    env = _env().set_parallelism(2).set_max_parallelism(32).set_slots_per_executor(3)
    env.set_runtime_mode(RuntimeMode.STREAMING).register_slot_sharing_group("big", cpu="2")
    env.get_config().enable_object_reuse()
    a = env.from_collection([["a", 1], ["b", 2]]).name("a")
    b = env.from_sequence(1, 4).name("b").map(api_fns.double).name("b-doubled")
    merged = a.rebalance().union(b.shuffle())
    counts = merged.key_by(0).sum(1).name("counts").slot_sharing_group("big").uid("counts-1")
    counts.filter(api_fns.positive).start_new_chain().print("n").set_parallelism(1)
    counts.sink_to(FileSink("/tmp/out", "json")).disable_chaining()
    return env


def test_to_manifest_round_trips_to_an_equal_spec() -> None:
    env = _rich_job()
    text = env.to_manifest("rich")
    job = load_manifest_text(text)
    assert job.metadata.name == "rich"
    assert job.spec == env.build_spec()
    assert env.build_job("rich").model_dump() == job.model_dump()


def test_a_bad_job_name_is_reported() -> None:
    with pytest.raises(SpecError, match=r"metadata\.name"):
        _rich_job().build_job("not a name")


def test_to_manifest_refuses_what_does_not_compile() -> None:
    env = _env().set_parallelism(2)
    env.from_sequence(1, 3).set_parallelism(1).forward().print()
    env.build_spec()  # shape is fine; the forward edge between 1 and 2 subtasks is not
    with pytest.raises(SpecError, match="forward partitioning needs equal parallelism"):
        env.to_manifest("bad")


class _Result:
    """What the runtime's run_job returns, as far as execute() reads it."""

    def __init__(self, failure: str | None = None) -> None:
        self.failure = failure
        self.job_status = JobStatus.FINISHED if failure is None else JobStatus.FAILED

    def check(self) -> _Result:
        if self.failure is not None:
            raise RuntimeError(self.failure)
        return self


def _fake_runtime(monkeypatch: pytest.MonkeyPatch, *results: _Result
                  ) -> list[tuple[CompiledJob, object]]:
    """A runtime module whose run_job records what it is given and returns ``results``."""
    received: list[tuple[CompiledJob, object]] = []
    returned = iter(results)
    runtime = types.ModuleType("dataflow_engine.runtime")

    def run_job(compiled: CompiledJob, config: object = None) -> _Result:
        received.append((compiled, config))
        return next(returned)

    runtime.run_job = run_job  # type: ignore[attr-defined]
    runtime.RunnerConfig = types.SimpleNamespace  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dataflow_engine.runtime", runtime)
    return received


def test_execute_compiles_and_hands_the_job_to_the_runtime(
        monkeypatch: pytest.MonkeyPatch) -> None:
    finished = _Result()
    received = _fake_runtime(monkeypatch, finished)
    env = _rich_job()
    env.add_python_file("/mnt/code/helpers.py")
    spec = env.build_spec()
    assert env.compile().job_name == "dataflow-job"
    assert env.execute("rich-job") is finished
    ((compiled, config),) = received
    assert config == types.SimpleNamespace(py_files=["/mnt/code/helpers.py"], spark_conf={})
    assert compiled.job_name == "rich-job"
    assert compiled.spec == spec


def test_execute_raises_when_the_job_did_not_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_runtime(monkeypatch, _Result("map 'explode' (2/2) failed: ValueError: boom"))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).print()
    with pytest.raises(RuntimeError, match=r"explode.*boom"):
        env.execute()


def test_a_second_execute_runs_only_what_was_added_since(
        monkeypatch: pytest.MonkeyPatch) -> None:
    received = _fake_runtime(monkeypatch, _Result(), _Result())
    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_collection([1, 2])
    numbers.print()
    env.execute("first")
    # A sink on a stream of the first job reads that job's source again.
    numbers.map(api_fns.double).print()
    env.execute("second")
    (first, _), (second, _) = received
    assert [op.type.value for op in first.spec.pipeline] == ["collection", "print"]
    assert [op.type.value for op in second.spec.pipeline] == ["collection", "map", "print"]
    assert len({op.name for op in second.spec.pipeline}) == 3


def test_a_job_without_parallelism_runs_with_the_default_local_parallelism(
        monkeypatch: pytest.MonkeyPatch) -> None:
    received = _fake_runtime(monkeypatch, _Result(), _Result())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_default_local_parallelism(3)
    env.from_collection([1, 2]).map(api_fns.double).print()
    assert env.build_spec().parallelism == 1  # the manifest's default
    env.execute()
    env.set_max_parallelism(2).from_collection([1]).print()
    env.execute()
    (first, _), (second, _) = received
    assert first.spec.parallelism == 3 and first.job_graph.vertices[-1].parallelism == 3
    assert second.spec.parallelism == 2  # never above the max parallelism


def test_execute_async_runs_the_job_on_a_thread_and_reports_through_its_client(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started = threading.Event()
    received = _fake_runtime(monkeypatch, _Result())
    runtime = sys.modules["dataflow_engine.runtime"]
    recorded_run = runtime.run_job

    def run_job(compiled: CompiledJob, config: Any) -> _Result:
        config.status_listener(types.SimpleNamespace(job_status=JobStatus.RUNNING))
        started.set()
        assert config.stop.wait(10)  # cancel() sets it
        return recorded_run(compiled, config)  # type: ignore[no-any-return]

    runtime.run_job = run_job  # type: ignore[attr-defined]
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).print()
    client = env.execute_async("async")
    assert started.wait(10)
    assert client.get_job_status().result() is JobStatus.RUNNING
    result = client.get_job_execution_result()
    assert not result.done()
    client.cancel().result()
    assert result.result() is not None and client.get_job_status().result().is_terminal_state()
    ((compiled, config),) = received
    assert config.job_id == str(client.get_job_id()) and len(config.job_id) == 32
    assert compiled.job_name == "async"


def test_execute_async_hands_a_failure_to_whoever_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_runtime(monkeypatch, _Result("map 'explode' (1/1) failed: ValueError: boom"))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).print()
    future = env.execute_async().get_job_execution_result()
    with pytest.raises(RuntimeError, match="boom"):
        future.result()
    assert isinstance(future.exception(), RuntimeError)


def test_the_execution_plan_is_the_stream_graph_and_clears_nothing() -> None:
    env = StreamExecutionEnvironment.get_execution_environment().set_default_local_parallelism(2)
    env.from_collection([1, 2]).map(api_fns.double).print()
    plan = json.loads(env.get_execution_plan())
    assert [(n["name"], n["parallelism"]) for n in plan["streamNodes"]] == [
        ("collection-1", 1), ("map-2", 2), ("print-3", 2)]
    assert [op.name for op in env.build_spec().pipeline] == ["collection-1", "map-2", "print-3"]


def test_settings_of_a_run_from_here(monkeypatch: pytest.MonkeyPatch) -> None:
    received = _fake_runtime(monkeypatch, _Result())
    env = StreamExecutionEnvironment.get_execution_environment()
    with pytest.warns(UserWarning, match=r"add_jars\(\) is accepted and not needed"):
        env.add_jars("file:///opt/flink-sql-connector-kafka.jar")
    with pytest.warns(UserWarning, match="add_classpaths"):
        env.add_classpaths("file:///opt/classes")
    env.set_python_executable("/opt/venv/bin/python")
    env.add_python_archive("/opt/env.zip", "venv").add_python_archive("/opt/data.zip")
    env.from_collection([1]).print()
    env.execute()
    ((_, config),) = received
    assert config.spark_conf == {"spark.pyspark.python": "/opt/venv/bin/python",
                                 "spark.archives": "/opt/env.zip#venv,/opt/data.zip"}


def _wordcount_module() -> types.ModuleType:
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module("wordcount")
    finally:
        sys.path.remove(str(EXAMPLES))


def test_wordcount_py_is_wordcount_yaml() -> None:
    env = _wordcount_module().job()
    assert isinstance(env, StreamExecutionEnvironment)
    yaml_job = load_manifest(EXAMPLES / "wordcount.yaml")
    assert env.build_spec() == yaml_job.spec
    assert load_manifest_text(env.to_manifest("wordcount")).model_dump() == yaml_job.model_dump()
    chains = [(v.name, v.parallelism) for v in env.compile("wordcount").job_graph.vertices]
    assert chains == [
        ("Source: Collection Source", 1),
        ("Flat Map", 2),
        ("Keyed Aggregation -> Filter -> Sink: Print to Std. Out", 2),
    ]


# -- functions shipped by value -----------------------------------------------------------------


class _Holder:
    @staticmethod
    def static(value: int) -> int:
        return value

    def method(self, value: int) -> int:
        return value


@pytest.mark.parametrize(("func", "reason"), [
    (lambda x: x, "it is a lambda"),
    (api_fns.make_closure(), "it is defined inside a function"),
    (functools.partial(api_fns.double), "it is a functools.partial"),
    (api_fns.Tokenizer().method, "it is a bound method"),
    (api_fns.Splitter(","), "it is an instance of Splitter"),
    (_Holder.static, "not at the top level of its module"),
    ("abc".upper, "it is a bound method"),
])
def test_unimportable_functions_run_from_python_but_not_from_a_manifest(
        func: object, reason: str) -> None:
    env = _env()
    _numbers(env).map(func).name("m").print()
    reference = _op(env.build_spec(), "m").function
    assert reference is not None and reference.startswith("dataflow_engine.functions.shipped:")
    with pytest.raises(SpecError) as info:
        env.to_manifest("job")
    (problem,) = info.value.problems
    assert problem.path == "spec.pipeline[1].function"
    assert "operator 'm'" in problem.message and reason in problem.message
    assert "must be an importable top-level function or class (module:callable)" in (
        problem.message)


def test_an_instance_without_state_of_its_own_is_named_by_its_class() -> None:
    # PyFlink programs pass MyFunction(); the runtime makes an instance per subtask anyway.
    env = _env()
    _numbers(env).map(api_fns.Tokenizer()).name("m").print()
    assert _op(env.build_spec(), "m").function == "api_fns:Tokenizer"
    assert "api_fns:Tokenizer" in env.to_manifest("job")


def test_a_lambda_key_selector_is_named_by_its_field_in_to_manifest() -> None:
    env = _env()
    _numbers(env).key_by(lambda x: x % 2).sum(0).name("s").print()
    with pytest.raises(SpecError) as info:
        env.to_manifest("job")
    assert [p.path for p in info.value.problems] == ["spec.pipeline[1].inputs[0].keyBy"]
    assert "it is a lambda" in info.value.problems[0].message


def test_a_replaced_name_is_shipped_by_value() -> None:
    def double(value: int) -> int:  # same name as api_fns.double, different object
        return value

    double.__module__, double.__qualname__ = "api_fns", "double"
    env = _env()
    _numbers(env).map(double).name("m").print()
    with pytest.raises(SpecError, match="api_fns:double is not this object"):
        env.to_manifest("job")


def test_python_builtins_are_importable() -> None:
    env = _env()
    _numbers(env).map(abs).name("m").print()
    assert _op(env.build_spec(), "m").function == "builtins:abs"


# -- __main__ and imports, in fresh interpreters ---------------------------------------------

_SCRIPT = """
from dataflow_engine.api import StreamExecutionEnvironment

def double(value):
    return value * 2

env = StreamExecutionEnvironment.get_execution_environment()
env.from_sequence(1, 3).map(double).name("m").print()
print(next(op.function for op in env.build_spec().pipeline if op.name == "m"))
try:
    env.to_manifest("job")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def _python(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.strip()


def test_functions_of_a_script_are_named_by_the_scripts_module(tmp_path: Path) -> None:
    (tmp_path / "myjob.py").write_text(_SCRIPT)
    assert _python(str(tmp_path / "myjob.py"), cwd=ROOT).splitlines()[0] == "myjob:double"


def test_functions_of_a_module_run_with_dash_m_are_named_by_the_module(tmp_path: Path) -> None:
    package = tmp_path / "jobs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "myjob.py").write_text(_SCRIPT)
    assert _python("-m", "jobs.myjob", cwd=tmp_path).splitlines()[0] == "jobs.myjob:double"


@pytest.mark.parametrize("how", ["-c", "script-with-dashes"])
def test_functions_of_an_unimportable_main_are_shipped_not_in_manifests(
        tmp_path: Path, how: str) -> None:
    if how == "-c":
        out = _python("-c", _SCRIPT, cwd=tmp_path)
    else:
        (tmp_path / "my-job.py").write_text(_SCRIPT)
        out = _python(str(tmp_path / "my-job.py"), cwd=tmp_path)
    reference, refusal = out.split("\n", 1)
    assert reference.startswith("dataflow_engine.functions.shipped:")
    assert refusal.startswith("SpecError spec.pipeline[1].function: operator 'm': map function "
                              "'double' must be an importable top-level"), refusal
    assert "__main__ that cannot be imported by name" in refusal


def test_the_api_imports_neither_spark_nor_kubernetes(tmp_path: Path) -> None:
    probe = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(EXAMPLES)!r})
        import dataflow_engine.api
        import wordcount, page_views, event_time_alerts, clicks_per_second
        wordcount.job().compile("wordcount")
        wordcount.job().to_manifest("wordcount")
        page_views.job().to_manifest("page-views")
        event_time_alerts.job().compile("alerts")
        assert clicks_per_second.job().compile("clicks").continuous
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("pyspark", "py4j", "kubernetes", "kopf"))
        print(heavy)
    """)
    assert _python("-c", probe, cwd=tmp_path) == "[]"


def test_python_files_and_requirements_as_in_pyflink(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(
        "# the job's\nhumanize==4.9.0\n\n/mnt/wheels/probe-1.0-py3-none-any.whl\n")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.add_python_file("/mnt/code/helpers.py").add_python_file("https://code.example/etl.zip")
    env.set_python_requirements(requirements, requirements_cache_dir="/cache/venvs")
    env.from_sequence(1, 3).map(library.square).print()
    spec = load_manifest_text(env.to_manifest("shipped")).spec
    assert [(f.path, f.url) for f in spec.py_files] == [
        ("/mnt/code/helpers.py", None), (None, "https://code.example/etl.zip")]
    assert spec.requirements == ["humanize==4.9.0", "/mnt/wheels/probe-1.0-py3-none-any.whl"]
    assert spec.requirements_cache_dir == "/cache/venvs"
    with pytest.raises(ValueError, match="absolute path"):
        env.add_python_file("helpers.py")


def test_objects_of_a_script_travel_by_value_under_their_module_name() -> None:
    # An executor must never import the script (it would run the job again): install stands
    # a module holding only the shipped objects in for it.
    from dataflow_engine.functions import shipped
    from dataflow_engine.functions.references import parse_function_ref, resolve

    def label(value: int) -> str:
        return f"#{value}"

    name = "a_script_nobody_can_import"
    try:
        shipped.install({f"{name}:label": label})
        assert resolve(parse_function_ref(f"{name}:label")) is label
        assert getattr(sys.modules[name], "__file__", None) is None
    finally:
        sys.modules.pop(name, None)


def test_a_data_generator_source_with_checkpoints_builds_a_continuous_job() -> None:
    from dataflow_engine.api.common import WatermarkStrategy
    from dataflow_engine.api.datastream import (
        CheckpointingMode,
        DataGeneratorSource,
        RateLimiterStrategy,
    )

    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(10_000, CheckpointingMode.AT_LEAST_ONCE)
    (env.get_checkpoint_config().set_checkpoint_storage_dir("/mnt/chk")
     .set_min_pause_between_checkpoints(500).set_checkpoint_timeout(60_000)
     .set_tolerable_checkpoint_failure_number(2))
    source = DataGeneratorSource(api_fns.indexed_event, None, RateLimiterStrategy.per_second(50))
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        api_fns.event_time_of)
    env.from_source(source, strategy, "events").key_by(0).sum(1).print()
    spec = load_manifest_text(env.to_manifest("generated")).spec
    assert spec.checkpointing is not None
    assert spec.checkpointing.model_dump(by_alias=True, exclude_defaults=True) == {
        "interval": "10s", "mode": "AT_LEAST_ONCE", "storage": "/mnt/chk", "minPause": "500ms",
        "timeout": "1m", "tolerableFailedCheckpoints": 2}
    events = spec.pipeline[0]
    assert (events.name, events.type.value, events.function) == (
        "events", "datagen", "api_fns:indexed_event")
    assert events.args == {"rowsPerSecond": 50.0, "seed": 0}
    assert spec.pipeline[1].type.value == "timestamps"
    assert env.compile("generated").continuous  # unbounded, so AUTOMATIC is STREAMING
    with pytest.raises(ValueError, match="records per second"):
        RateLimiterStrategy.per_second(0)
    with pytest.raises(ValueError, match="count"):
        DataGeneratorSource(api_fns.indexed_event, -1)


def test_kafka_source_and_sink_become_the_specs_kafka_operators() -> None:
    from dataflow_engine.api import DeliveryGuarantee, KafkaSink
    from dataflow_engine.api.common import Duration, WatermarkStrategy
    from dataflow_engine.api.datastream import KafkaSource

    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(1000)
    env.get_checkpoint_config().set_checkpoint_storage_dir("/mnt/chk")
    source = KafkaSource("k:9092", topics=["clicks"], value_format="json")
    stamped = env.from_source(source, WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_seconds(5)), "clicks")
    stamped.sink_to(KafkaSink("k:9092", "out", value_format="json",
                              delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE,
                              transactional_id_prefix="clicks-out"))
    env.from_source(source, WatermarkStrategy.no_watermarks()).print()
    spec = load_manifest_text(env.to_manifest("generated")).spec
    assert [(op.type.value, op.args) for op in spec.pipeline] == [
        ("kafka", {"bootstrapServers": "k:9092", "topics": ["clicks"], "valueFormat": "json"}),
        ("timestamps", {}),
        ("kafka_sink", {"bootstrapServers": "k:9092", "topic": "out", "valueFormat": "json",
                        "deliveryGuarantee": "exactly-once",
                        "transactionalIdPrefix": "clicks-out"}),
        ("kafka", {"bootstrapServers": "k:9092", "topics": ["clicks"], "valueFormat": "json"}),
        ("print", {})]
    assert spec.pipeline[1].function is None  # the records' own Kafka timestamps
    assert env.compile("generated").continuous
    with pytest.raises(ValueError, match="transactionalIdPrefix"):
        KafkaSink("k:9092", "out", delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE)
    with pytest.raises(ValueError, match="topicPattern"):
        KafkaSource("k:9092")


def test_a_file_source_is_the_specs_text_operator_monitored_when_asked() -> None:
    from dataflow_engine.api.common import Duration
    from dataflow_engine.api.datastream import FileSource

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_source(FileSource("/in/a", "/in/b")).print()
    env.from_source(FileSource("/in/new", monitor_interval=Duration.of_seconds(5)),
                    source_name="incoming").print()
    spec = load_manifest_text(env.to_manifest("files")).spec
    assert [(op.name, op.type.value, op.args) for op in spec.pipeline if op.type.value == "text"
            ] == [("text-1", "text", {"path": ["/in/a", "/in/b"]}),
                  ("incoming", "text", {"path": "/in/new", "monitorInterval": "5000ms"})]
    assert env.compile("files").continuous
    with pytest.raises(ValueError, match="monitor_interval must be positive"):
        FileSource("/in", monitor_interval=Duration.of_millis(0))
