"""Every bad spec gets one clear problem naming the operator and the field."""

from __future__ import annotations

from typing import Any

import pytest
from graph_specs import op, source

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError

pytestmark = pytest.mark.unit
SINK = op("out", "discard", "m")
MAP = op("m", "map", "src")


def _problems(pipeline: list[dict[str, Any]], **settings: Any) -> list[str]:
    with pytest.raises(SpecError) as info:
        spec = parse_spec({"pipeline": pipeline, **settings})
        compile_job(spec, "test")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(("pipeline", "settings", "expected"), [
    ([source(), MAP, op("m", "map", "src"), SINK], {},
     "spec.pipeline[2].name: duplicate operator name 'm' (also spec.pipeline[1])"),
    ([source(), op("m", "map", "nope"), SINK], {},
     "spec.pipeline[1].inputs[0].from: operator 'm': unknown input 'nope'"),
    ([source(), op("a", "map", "src", "b"), op("b", "map", "a"), op("u", "union", "a"),
      op("out", "discard", "b")], {},
     "spec.pipeline[1].inputs: map operator 'a' takes one input"),
    ([source(), op("a", "union", "src", "b"), op("b", "map", "a"), op("out", "discard", "b")],
     {}, "spec.pipeline[2].inputs: cycle: b -> a -> b"),
    ([source(inputs=["m"]), MAP, SINK], {},
     "spec.pipeline[0].inputs: source 'src' cannot have inputs"),
    ([source(), MAP, SINK, op("again", "map", "out"), op("o2", "discard", "again")], {},
     "spec.pipeline[2]: sink 'out' cannot have consumers"),
    ([source(), op("k", "sum", "src"), op("out", "discard", "k")], {},
     "spec.pipeline[1].inputs[0].keyBy: keyed operator 'k' (sum) needs keyBy on its input "
     "from 'src'"),
    ([source(), op("m", "map", "src", parallelism=0), SINK], {},
     "spec.pipeline[1].parallelism: Input should be greater than or equal to 1"),
    ([source(), op("m", "map", "src", parallelism=200), SINK], {},
     "spec.pipeline[1].parallelism: operator 'm': parallelism 200 exceeds maxParallelism 128"),
    ([source(), op("m", "map", "src"), SINK], {"parallelism": 9, "maxParallelism": 8},
     "spec.pipeline[0].maxParallelism: operator 'src': parallelism 9 exceeds maxParallelism 8"),
    ([source(), op("m", "map", {"from": "src", "partitioning": "forward"}, parallelism=3),
      op("out", "discard", "m", parallelism=3)], {},
     "spec.pipeline[1].inputs[0].partitioning: operator 'm': forward partitioning needs equal "
     "parallelism, but 'src' has 1 and 'm' has 3"),
    ([source(), op("m", "mapp", "src"), SINK], {},
     "spec.pipeline[1].type: unknown value 'mapp'"),
    ([source(), op("m", "map", "src", function="not a ref"), SINK], {},
     "spec.pipeline[1].function: map operator 'm': malformed function reference 'not a ref'"),
    ([source(), op("m", "map", "src", function="pkg.mod:"), SINK], {},
     "spec.pipeline[1].function: map operator 'm': malformed function reference 'pkg.mod:'"),
    ([source(), op("m", "map", "src", function="no_such_builtin"), SINK], {},
     "spec.pipeline[1].function: map operator 'm': unknown built-in function 'no_such_builtin'"),
    ([source(), op("m", "map", "src", function="split_words"), SINK], {},
     "spec.pipeline[1].function: map operator 'm': built-in 'split_words' is a flat_map "
     "function"),
    ([source(), {"name": "m", "type": "map", "inputs": ["src"]}, SINK], {},
     "spec.pipeline[1].function: map operator 'm' needs a function"),
    ([source(), op("m", "map", "src"), op("out", "discard", "m", function="identity")], {},
     "spec.pipeline[2].function: discard operator 'out' takes no function"),
    ([source(), op("m", "map", "src"), op("out", "file", "m")], {},
     "spec.pipeline[2].args.path: file operator 'out': Field required"),
    ([{"name": "src", "type": "sequence", "args": {"from": 5, "to": 1}}, MAP, SINK], {},
     "spec.pipeline[0].args: sequence operator 'src': 'to' must not be less "
     "than 'from'"),
    ([source(), op("m", "map", "src", slotSharingGroup="gpu"), SINK], {},
     "spec.pipeline[1].slotSharingGroup: operator 'm': unknown slot sharing group 'gpu'"),
    ([source(), op("m", "map", {"from": "src", "keyBy": "bad key!"}), SINK], {},
     "spec.pipeline[1].inputs[0].keyBy: operator 'm': 'bad key!' is neither a field name"),
    ([source(), op("m", "map", {"from": "src", "keyBy": "a:b:c"}), SINK], {},
     "spec.pipeline[1].inputs[0].keyBy: operator 'm': malformed key selector 'a:b:c'"),
    ([source(), op("m", "map", {"from": "src", "keyBy": 0, "partitioning": "shuffle"}), SINK],
     {}, "spec.pipeline[1].inputs[0]: set either 'partitioning' or 'keyBy'"),
    ([source(), op("m", "map", "src")], {}, "spec.pipeline: the pipeline has no sink"),
    ([source(), op("u", "union", "src", parallelism=2), op("m", "map", "u"), SINK], {},
     "spec.pipeline[1].parallelism: union 'u' is virtual and has no parallelism"),
    ([source(), op("m", "map", "src", parallelizm=2), SINK], {},
     "spec.pipeline[1].parallelizm: unknown field"),
    ([source(), MAP, SINK], {"slotSharingGroups": [{"name": "a"}, {"name": "a"}]},
     "spec.slotSharingGroups[1].name: duplicate slot sharing group 'a'"),
    ([source(), MAP, SINK], {"slotSharingGroups": [{"name": "a", "cpu": "lots"}]},
     "spec.slotSharingGroups[0].cpu: String should match pattern"),
])
def test_problem_is_reported_with_its_path(
    pipeline: list[dict[str, Any]], settings: dict[str, Any], expected: str
) -> None:
    problems = _problems(pipeline, **settings)
    assert any(p.startswith(expected) for p in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    problems = _problems([source(), op("m", "map", "nope"), op("n", "map", "src",
                                                              function="x y")])
    assert len(problems) == 3, problems


def test_manifest_errors() -> None:
    with pytest.raises(SpecError, match="not valid YAML"):
        load_manifest_text("a: [")
    with pytest.raises(SpecError, match="kind must be DataflowJob"):
        load_manifest_text("apiVersion: dataflow.io/v1alpha1\nkind: Job\nmetadata: {name: a}\n"
                           "spec: {pipeline: [{name: s, type: collection, args: {elements: []}},"
                           " {name: o, type: print, inputs: [s]}]}")
    with pytest.raises(SpecError, match=r"^metadata: Field required"):
        load_manifest_text("apiVersion: dataflow.io/v1alpha1\nkind: DataflowJob\nspec: {}")


def test_compiler_never_imports_user_code() -> None:
    spec = parse_spec({"pipeline": [source(), op("m", "map", "src",
                                                  function="no.such.module:fn"), SINK]})
    plan = compile_job(spec, "t")
    assert plan.stream_graph.node("m").function == "no.such.module:fn"


def test_key_by_true_is_refused_not_read_as_field_one() -> None:
    from dataflow_engine.compiler.validation import parse_spec
    from dataflow_engine.errors import SpecError

    pipeline = [{"name": "s", "type": "sequence", "args": {"from": 1, "to": 2}},
                {"name": "k", "type": "sum", "args": {"field": 1},
                 "inputs": [{"from": "s", "keyBy": True}]},
                {"name": "o", "type": "discard", "inputs": ["k"]}]
    with pytest.raises(SpecError) as error:
        parse_spec({"pipeline": pipeline})
    assert [(p.path, p.message) for p in error.value.problems] == [(
        "spec.pipeline[1].inputs[0].keyBy",
        "expected a field index, a field name or a 'module:callable' key selector, not true")]


def _refusals(pipeline: list[dict[str, Any]], **settings: Any) -> list[tuple[str, str]]:
    """Every problem parse_spec finds, as (path, message)."""
    with pytest.raises(SpecError) as error:
        parse_spec({"pipeline": pipeline, **settings})
    return [(p.path, p.message) for p in error.value.problems]


CPU_FLOOR = "must be at least 1m (Kubernetes' smallest CPU unit), not"
EXECUTOR_FLOOR = ("an executor's memory must be at least 512Mi, the least heap of its JVM (Spark "
                  "refuses an executor heap under 450 MiB), not")


@pytest.mark.parametrize("cpu", ["0", "0m", "0.0", "0.0004"])
def test_a_slot_without_cpu_is_refused(cpu: str) -> None:
    groups = [{"name": "default", "cpu": cpu}]
    assert _refusals([source(), MAP, SINK], slotSharingGroups=groups) == [
        ("spec.slotSharingGroups[0].cpu", f"slot sharing group 'default': cpu {CPU_FLOOR} {cpu}")]


def test_an_executor_memory_under_the_jvm_heap_floor_is_refused() -> None:
    groups = [{"name": "default", "memory": "0"}, {"name": "big", "memory": "256Mi"},
              {"name": "small", "memory": "255Mi"}]
    # Two slots per executor: 256Mi a slot is an executor of 512Mi, enough; 255Mi is not.
    assert _refusals([source(), MAP, SINK], slotsPerExecutor=2, slotSharingGroups=groups) == [
        ("spec.slotSharingGroups[0].memory", f"slot sharing group 'default': {EXECUTOR_FLOOR} "
         "2 slots (slotsPerExecutor) x 0 = 0"),
        ("spec.slotSharingGroups[2].memory", f"slot sharing group 'small': {EXECUTOR_FLOOR} "
         "2 slots (slotsPerExecutor) x 255Mi = 510Mi")]
    assert _refusals([source(), MAP, SINK], slotSharingGroups=[{"name": "one", "memory": "400Mi"}]
                     ) == [("spec.slotSharingGroups[0].memory",
                            f"slot sharing group 'one': {EXECUTOR_FLOOR} 400Mi")]


def test_a_driver_without_cpu_or_room_for_its_heap_is_refused() -> None:
    assert _refusals([source(), MAP, SINK], driver={"cpu": "0", "memory": "1"}) == [
        ("spec.driver.cpu", f"the driver's cpu {CPU_FLOOR} 0"),
        ("spec.driver.memory", "the driver's memory must be at least 512Mi, the least heap of its "
         "JVM (half the memory, never less than that), not 1")]
    assert [path for path, _ in _refusals([source(), MAP, SINK], driver={"memory": "511Mi"})] == [
        "spec.driver.memory"]


@pytest.mark.parametrize(("mode", "why"), [
    ("BATCH", "runtimeMode is BATCH"),
    ("AUTOMATIC", "runtimeMode AUTOMATIC is BATCH here, every source being bounded"),
])
def test_checkpointing_a_batch_job_is_refused(mode: str, why: str) -> None:
    assert _refusals([source(), MAP, SINK], runtimeMode=mode,
                     checkpointing={"interval": "10s"}) == [(
        "spec.checkpointing", f"{why}, and a BATCH job takes no checkpoints (Flink ignores them "
        "there): remove checkpointing, or set runtimeMode STREAMING")]


KEY_BY_TAKES = ("expected the key to hash-partition by: a field index of tuple records (0-based), "
                "a field name of mapping records, or a 'module:callable' key selector, not")


@pytest.mark.parametrize(("pipeline", "expected"), [
    ([source(), op("m", "map", {"from": "src", "keyBy": [1]}), SINK],
     ("spec.pipeline[1].inputs[0].keyBy", f"{KEY_BY_TAKES} [1]")),
    ([source(), op("m", "map", {"from": "src", "keyBy": 1.5}), SINK],
     ("spec.pipeline[1].inputs[0].keyBy", f"{KEY_BY_TAKES} 1.5")),
    ([source(), op("t", "timestamps", "src", watermarkStrategy={
        "type": "noWatermarks", "timestampField": {"at": 1}}), op("out", "discard", "t")],
     ("spec.pipeline[1].watermarkStrategy.timestampField",
      "expected the field holding the event time in epoch milliseconds (instead of a timestamp "
      'assigner function): a field index of tuple records or a field name of mapping records, '
      'not {"at": 1}')),
    ([{"name": "src", "type": "text", "args": {"path": 5}}, MAP, SINK],
     ("spec.pipeline[0].args.path", "text operator 'src': expected a file, a directory or a "
      "glob, or a list of them, not 5")),
    # A branch that takes the value's type says what is wrong with the value, where it is.
    ([{"name": "src", "type": "text", "args": {"path": ["a", 3]}}, MAP, SINK],
     ("spec.pipeline[0].args.path[1]", "text operator 'src': Input should be a valid string")),
    ([source(), op("k", "sum", {"from": "src", "keyBy": 0}, args={"field": -1}),
      op("out", "discard", "k")],
     ("spec.pipeline[1].args.field", "sum operator 'k': Input should be greater than or equal "
      "to 0")),
])
def test_a_union_field_is_named_as_written_and_says_what_it_takes(
        pipeline: list[dict[str, Any]], expected: tuple[str, str]) -> None:
    assert _refusals(pipeline) == [expected]


STREAM = [source("events", type="datagen", args={"rowsPerSecond": 10}),
          op("m", "map", "events"), SINK]
DURABLE = {"runtimeMode": "STREAMING",
           "checkpointing": {"interval": "1s", "storage": "/tmp/checkpoints"}}


def test_an_autoscaler_that_would_lose_state_or_has_bounds_inverted_is_refused() -> None:
    refusals = _refusals(STREAM, **DURABLE, job={"autoscaler": {
        "enabled": True, "minParallelism": 4, "maxParallelism": 2, "metricsWindow": "0s",
        "vertices": [{"operator": "nope"}, {"operator": "m", "minParallelism": 3,
                                            "maxParallelism": 1}]}})
    assert sorted(refusals) == sorted([
        ("spec.job.upgradeMode", "the autoscaler rescales the job through an upgrade that "
         "keeps its state: set upgradeMode savepoint or last-state (or autoscaler.advisory)"),
        ("spec.job.autoscaler.metricsWindow", "must be above 0"),
        ("spec.job.autoscaler.minParallelism", "4 is above maxParallelism 2"),
        ("spec.job.autoscaler.vertices[1].minParallelism", "3 is above maxParallelism 1"),
        ("spec.job.autoscaler.vertices[0].operator", "the pipeline has no operator 'nope'")])
    # Advisory: it only recommends, so a stateless job may have it; disabled, nothing is read.
    parse_spec({"pipeline": STREAM, **DURABLE, "job": {"autoscaler": {
        "enabled": True, "advisory": True}}})
    parse_spec({"pipeline": STREAM, **DURABLE, "job": {"autoscaler": {"metricsWindow": "0s"}}})


def test_an_autoscaler_of_a_job_that_runs_to_its_end_is_refused() -> None:
    bounded = [source(), MAP, SINK]
    assert _problems(bounded, job={"autoscaler": {"enabled": True, "advisory": True}}) == [
        "spec.job.autoscaler.enabled: the autoscaler scales a continuous job (STREAMING, with "
        "an unbounded source); this one runs to the end of its input"]
    compile_job(parse_spec({"pipeline": STREAM, **DURABLE, "job": {
        "upgradeMode": "savepoint", "autoscaler": {"enabled": True}}}), "test")


def test_an_autoscaler_bound_on_a_union_is_refused() -> None:
    streams = [source("a", type="datagen", args={"rowsPerSecond": 10}),
               source("b", type="datagen", args={"rowsPerSecond": 10}),
               op("both", "union", "a", "b"), op("m", "map", "both"), SINK]
    assert _problems(streams, **DURABLE, job={"upgradeMode": "savepoint", "autoscaler": {
        "enabled": True, "vertices": [{"operator": "both"}]}}) == [
        "spec.job.autoscaler.vertices[0].operator: 'both' is part of no JobVertex (a union): "
        "name an operator it feeds or is fed by"]
