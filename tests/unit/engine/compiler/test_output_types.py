"""Flink's outputType: declared in the spec (from PyFlink's output_type/type_info), inherited
where records pass through, shown by ``dataflow compile``, and a typed collection's elements
carried in the manifest in their type's JSON form."""

from __future__ import annotations

import json
from typing import Any

import api_fns
import pytest
from graph_specs import compiled, op, source

from dataflow_engine.api.common import Types
from dataflow_engine.api.datastream import StreamExecutionEnvironment
from dataflow_engine.api.datastream.window import TumblingProcessingTimeWindows
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError
from dataflow_engine.render import Layer
from dataflow_engine.render.plan_json import plan_json
from dataflow_engine.render.plan_text import plan_text
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.types import Row, type_text

pytestmark = pytest.mark.unit

PAIR = "TUPLE<STRING, INT>"
WORDS = {"name": "src", "type": "collection", "args": {"elements": [["a", 1]]},
         "outputType": PAIR}


def _types(*pipeline: dict[str, Any]) -> dict[str, str | None]:
    graph = compiled(*pipeline).stream_graph
    return {n.name: None if n.output_type is None else type_text(n.output_type)
            for n in graph.nodes.values()}


def test_records_keep_their_inputs_type_where_they_pass_through() -> None:
    types = _types(
        WORDS,
        op("kept", "filter", "src"),
        op("sums", "sum", {"from": "kept", "keyBy": 0}),
        op("reduced", "reduce", {"from": "sums", "keyBy": 0}),
        op("mapped", "map", "reduced"),
        op("typed", "map", "mapped", outputType="ROW<word STRING, n INT>"),
        op("again", "filter", "typed"),
        op("out", "discard", "again"))
    assert types == {"src": PAIR, "kept": PAIR, "sums": PAIR, "reduced": PAIR, "mapped": None,
                     "typed": "ROW<word STRING, n INT>", "again": "ROW<word STRING, n INT>",
                     "out": None}


def test_sources_of_one_type_and_unions_of_the_first_stream() -> None:
    types = _types(
        source("numbers"),
        {"name": "lines", "type": "text", "args": {"path": "/in"}},
        op("both", "union", "numbers", "lines"),
        op("kept", "filter", "both"),
        op("out", "discard", "kept"))
    assert (types["numbers"], types["lines"], types["kept"]) == ("LONG", "STRING", "LONG")


def _window(kind: str, **extra: Any) -> dict[str, Any]:
    window = {"assigner": {"type": "tumbling", "size": "1s", "time": "processing"},
              "kind": kind, **extra}
    return op("w", "window", {"from": "src", "keyBy": 0}, function="api_fns:keep_latest",
              window=window)


@pytest.mark.parametrize(("window", "expected"), [
    (_window("reduce"), PAIR),
    (_window("reduce", windowFunction="api_fns:keep_latest"), None),
    ({**_window("reduce", windowFunction="api_fns:keep_latest"), "outputType": "STRING"},
     "STRING"),
])
def test_a_window_reduce_keeps_its_inputs_type_unless_a_function_follows(
        window: dict[str, Any], expected: str | None) -> None:
    assert _types(WORDS, window, op("out", "discard", "w"))["w"] == expected


def test_a_side_output_has_no_declared_type() -> None:
    window = _window("reduce", lateDataOutput="late")
    late = op("late-kept", "filter", {"from": "w", "sideOutput": "late"})
    assert _types(WORDS, window, late, op("out", "discard", "late-kept"),
                  op("main", "discard", "w"))["late-kept"] is None


def _problems(*pipeline: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        compile_job(parse_spec({"pipeline": list(pipeline)}), "test")
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize(("pipeline", "expected"), [
    ([source(outputType="TUPLE<INT"), op("out", "discard", "src")],
     "spec.pipeline[0].outputType: type text 'TUPLE<INT': expected ',' but found the end at "
     "offset 9"),
    ([source(outputType="NUMBER"), op("out", "discard", "src")],
     "spec.pipeline[0].outputType: type text 'NUMBER': unknown type 'NUMBER'"),
    ([source(), op("out", "print", "src", outputType="STRING")],
     "spec.pipeline[1].outputType: print operator 'out': a sink has no outputType"),
    ([source(), op("u", "union", "src", outputType="STRING"), op("out", "discard", "u")],
     "spec.pipeline[1].outputType: union operator 'u': a union (it has its inputs' type) has "
     "no outputType"),
    ([{**WORDS, "args": {"elements": [["a", 1], ["b", "2"]]}}, op("out", "discard", "src")],
     "spec.pipeline[0].args.elements[1][1]: collection operator 'src': INT is written as an "
     "integer, not '2'"),
    ([{**WORDS, "args": {"elements": [["a", 2**31]]}}, op("out", "discard", "src")],
     "spec.pipeline[0].args.elements[0]: collection operator 'src': 2147483648 is out of "
     "INT's range"),
    ([{**WORDS, "args": {"elements": [["a", 1]], "tuples": True}}, op("out", "discard", "src")],
     "spec.pipeline[0].args.tuples: collection operator 'src': with an outputType the "
     "elements are of that type"),
])
def test_a_bad_output_type_is_reported_at_its_field(pipeline: list[dict[str, Any]],
                                                     expected: str) -> None:
    problems = _problems(*pipeline)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_compile_shows_the_type_of_each_node() -> None:
    job = compiled(WORDS, op("kept", "filter", "src"), op("out", "print", "kept"))
    text = plan_text(job, Layer.STREAM).splitlines()
    assert text[1].endswith(f"chaining=HEAD outputType={PAIR}")
    assert text[2].endswith(f"chaining=ALWAYS outputType={PAIR}")
    assert "outputType" not in text[3]
    nodes = plan_json(job, Layer.STREAM)["streamNodes"]
    assert [n.get("outputType") for n in nodes] == [PAIR, PAIR, None]


def _pyflink_job() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    named = Types.ROW_NAMED(["id", "info"], [Types.INT(), Types.STRING()])
    rows = env.from_collection([(1, "a"), {"id": 2, "info": "b"}], type_info=named)
    pairs = rows.map(api_fns.double, output_type=Types.TUPLE([Types.STRING(), Types.FLOAT()]))
    pairs.key_by(api_fns.first_letter).window(TumblingProcessingTimeWindows.of(1000)) \
        .reduce(api_fns.keep_latest, output_type=Types.STRING()).print()
    pairs.key_by(api_fns.first_letter).process(api_fns.double, Types.LIST(Types.LONG())) \
        .print()
    return env


def test_the_api_declares_what_pyflink_programs_give() -> None:
    spec = _pyflink_job().build_spec()
    declared = {o.name: o.output_type for o in spec.pipeline}
    assert declared == {"collection-1": "ROW<id INT, info STRING>",
                        "map-2": "TUPLE<STRING, FLOAT>",
                        "window-3": None,  # a reduce alone keeps its input's type
                        "print-4": None, "process-5": "LIST<LONG>", "print-6": None}
    elements = spec.pipeline[0].args["elements"]
    assert elements == [[1, "a"], [2, "b"]] and "tuples" not in spec.pipeline[0].args


def test_a_typed_collection_round_trips_through_its_manifest() -> None:
    text = _pyflink_job().to_manifest("typed")
    job = load_manifest_text(text)
    assert job.spec.pipeline[0].output_type == "ROW<id INT, info STRING>"
    plan = plan_job(compile_job(job.spec, "typed"))
    source_op = next(o for vp in plan.vertices.values() for o in vp.descriptor.operators
                     if o.name == "collection-1")
    records = [r for split in source_op.splits for r in split]  # type: ignore[union-attr]
    assert records == [Row(id=1, info="a"), Row(id=2, info="b")]
    assert records[0].info == "a"
    assert json.loads(json.dumps(job.spec.pipeline[0].args)) == job.spec.pipeline[0].args


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda env: env.from_collection([1], type_info="INT"), TypeError,
     "type_info must be a TypeInformation such as Types.STRING()"),
    (lambda env: env.from_collection([1], type_info=Types.INT()).map(api_fns.double,
                                                                      output_type=int),
     TypeError, "output_type must be a TypeInformation"),
    (lambda env: env.from_collection([1, 2**40], type_info=Types.INT()), ValueError,
     "from_collection: element 1 1099511627776: 1099511627776 is out of INT's range"),
    (lambda env: env.from_collection([("a",)], type_info=Types.TUPLE([Types.STRING(),
                                                                       Types.INT()])),
     ValueError, "from_collection: element 0 ('a',): TUPLE<STRING, INT> has 2 fields"),
])
def test_a_type_that_does_not_fit_fails_at_the_call(call: Any, error: type[Exception],
                                                    message: str) -> None:
    with pytest.raises(error) as caught:
        call(StreamExecutionEnvironment.get_execution_environment())
    assert str(caught.value).startswith(message), str(caught.value)


def test_pyflink_key_by_hashes_as_pyflink_and_a_field_key_as_java() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    words = env.from_collection([("a", 1)])
    words.key_by(api_fns.first_letter).sum(1).print()
    words.key_by(api_fns.first_letter, key_type=Types.STRING()).sum(1).print()
    words.key_by(0).sum(1).print()
    edges = [op.inputs[0] for op in env.build_spec().pipeline if op.type.value == "sum"]
    assert [e.key_type for e in edges] == ["PICKLED_BYTE_ARRAY", "STRING", None]
    graph = env.compile().stream_graph
    text = plan_text(env.compile(), Layer.STREAM)
    assert "keyType=PICKLED_BYTE_ARRAY" in text and "keyType=STRING" in text
    assert [type_text(e.key_type) if e.key_type else None for e in graph.edges
            if e.key_selector is not None] == ["PICKLED_BYTE_ARRAY", "STRING", None]


def test_inputs_of_one_keyed_operator_must_hash_alike() -> None:
    problems = _problems(
        source("left"), source("right"),
        op("joined", "co_process", {"from": "left", "keyBy": 0, "keyType": "LONG"},
           {"from": "right", "keyBy": 0}, function="api_fns:Both"),
        op("out", "discard", "joined"))
    assert problems == [
        "spec.pipeline[2].inputs[1].keyType: operator 'joined': its inputs hash their keys "
        "differently (keyType LONG and unset), so one key would reach two subtasks; give "
        "every input the same keyType"]
    assert _problems(source(), op("m", "map", {"from": "src", "keyType": "LONG"}),
                     op("out", "discard", "m")) == [
        "spec.pipeline[1].inputs[0]: 'keyType' is the type of the keyBy's keys: set keyBy too"]


def test_streams_keyed_together_hash_alike_whatever_selects_their_keys() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    left, right = env.from_collection([("a", 1)]), env.from_collection([("a", 2)])
    left.connect(right).key_by(api_fns.first_letter, 0).process(api_fns.Both()).print()
    left.connect(right).key_by(0, 0).process(api_fns.Both()).print()
    left.join(right).where(0).equal_to(api_fns.first_letter) \
        .window(TumblingProcessingTimeWindows.of(1000)).apply(api_fns.PairJoin()).print()
    keyed = [[edge.key_type for edge in op.inputs] for op in env.build_spec().pipeline
             if len(op.inputs) == 2]
    assert keyed == [["PICKLED_BYTE_ARRAY"] * 2, [None, None], ["PICKLED_BYTE_ARRAY"] * 2]
    env.compile()  # and the graph takes them
