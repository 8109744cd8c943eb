"""Records of a declared type at run time, where PyFlink serializes them: converted when they
leave a chain (a RecordWriter) or reach a sink, never between chained operators (PyFlink fuses
its Python operators), and printed as PyFlink prints them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from graph_specs import compiled, op

from dataflow_engine.runtime.functions.aggregations import set_field
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.descriptors import TaskDescriptor
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.frames import decode_batch
from dataflow_engine.types import Row, RowKind, type_text
from dataflow_engine.types import Types as T

pytestmark = pytest.mark.unit

PAIRS = {"name": "src", "type": "collection", "args": {"elements": [["a", 110.1], ["b", 2]],
                                                       "tuples": True}}


def _typed(name: str, type_text: str, function: str = "identity", source: str = "src"
           ) -> dict[str, Any]:
    return op(name, "map", source, function=function, outputType=type_text)


def _run_source_task(*pipeline: dict[str, Any], parallelism: int = 1
                     ) -> tuple[TaskDescriptor, list[Any]]:
    """Runs the chain headed by the source; returns its descriptor and the records it wrote
    to the network."""
    plan = plan_job(compiled(*pipeline, parallelism=parallelism))
    descriptor = next(v.descriptor for v in plan.vertices.values()
                      if v.vertex.head.name == "src")
    frames = list(StreamTask(descriptor, 0, 0).invoke(iter(())))
    return descriptor, [r for batch in frames[1::2] for r in decode_batch(batch)]


def test_a_typed_stream_is_converted_where_it_leaves_the_chain_and_not_before(
        capsys: pytest.CaptureFixture[str]) -> None:
    _, written = _run_source_task(
        PAIRS, _typed("m", "TUPLE<STRING, FLOAT>"),
        op("fused", "map", "m"), op("out", "print", "fused"),
        op("keyed", "discard", {"from": "m", "keyBy": 0}))
    # the chained map reads the map's record as it was made: double precision
    assert capsys.readouterr().out.splitlines() == ["('a', 110.1)", "('b', 2)"]
    # the keyed exchange carries it converted: FLOAT is 32 bits, an int becomes a float
    assert written == [("a", 110.0999984741211), ("b", 2.0)]


@pytest.mark.parametrize(("type_text", "function", "lines"), [
    ("TUPLE<STRING, FLOAT>", "identity", ["(a,110.1)", "(b,2.0)"]),
    ("ROW<word STRING, n FLOAT>", "api_fns:as_row", ["+I[a,110.1]", "+I[b,2]"]),
    ("TUPLE<STRING, ROW<x DOUBLE>>", "api_fns:nest", ["(a,+I[110.1])", "(b,+I[2.0])"]),
    ("PICKLED_BYTE_ARRAY", "identity", ["('a', 110.1)", "('b', 2)"]),
])
def test_a_print_sink_prints_as_pyflink_prints_the_declared_type(
        type_text: str, function: str, lines: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    _run_source_task(PAIRS, _typed("m", type_text, function), op("out", "print", "m"))
    assert capsys.readouterr().out.splitlines() == lines


def test_a_sink_reading_several_inputs_of_one_type_uses_it_and_of_several_types_none() -> None:
    def input_type(*maps: dict[str, Any]) -> Any:
        plan = plan_job(compiled(PAIRS, *maps, op("both", "union", *(m["name"] for m in maps)),
                                 op("out", "print", "both")))
        return next(o.input_type for v in plan.vertices.values()
                    for o in v.descriptor.operators if o.name == "out")

    pair = "TUPLE<STRING, DOUBLE>"
    assert type_text(input_type(_typed("one", pair), _typed("two", pair))) == pair
    assert input_type(_typed("one", pair), _typed("two", "TUPLE<STRING, FLOAT>")) is None
    assert input_type(_typed("one", pair), op("two", "map", "src")) is None


def test_a_record_that_does_not_fit_its_type_fails_the_operator_that_declared_it() -> None:
    with pytest.raises(OperatorFailure) as caught:
        _run_source_task(PAIRS, _typed("m", "TUPLE<STRING, INT>", "api_fns:first_letter"),
                         op("keyed", "discard", {"from": "m", "keyBy": 0}))
    assert caught.value.failure.operator == "m"
    assert "TUPLE<STRING, INT> has 2 fields, ('a',) has 1" in str(caught.value)
    with pytest.raises(OperatorFailure) as printed:
        _run_source_task(PAIRS, _typed("m", "ROW<w STRING, n INT>"), op("out", "print", "m"))
    assert printed.value.failure.operator == "out"
    assert "a ROW stream prints Rows, not tuple" in str(printed.value)


def test_the_file_sink_writes_javas_form_and_collect_gives_converted_records(
        tmp_path: Path) -> None:
    descriptor, _ = _run_source_task(
        PAIRS, _typed("m", "ROW<word STRING, n FLOAT>", "api_fns:as_row"),
        op("file", "file", "m", args={"path": str(tmp_path)}), op("got", "collect", "m"))
    assert (tmp_path / "part-00000").read_text().splitlines() == ["+I[a, 110.1]", "+I[b, 2.0]"]
    collect = next(o for o in descriptor.operators if o.name == "got")
    assert collect.input_type is not None


def test_records_from_a_typed_collection_are_of_their_type(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = {"name": "src", "type": "collection", "outputType": "ROW<id INT, info STRING>",
            "args": {"elements": [[1, "x"], {"rowKind": "-D", "fields": [2, "y"]}]}}
    _, written = _run_source_task(rows, op("out", "print", "src"),
                                  op("keyed", "discard", {"from": "src", "keyBy": 0}))
    assert capsys.readouterr().out.splitlines() == ["+I[1,x]", "-D[2,y]"]
    assert written == [Row(id=1, info="x"), Row.of_kind(RowKind.DELETE, id=2, info="y")]
    assert written[1].info == "y"


def test_sum_min_and_max_replace_a_rows_field_by_index_or_name() -> None:
    row = Row.of_kind(RowKind.UPDATE_AFTER, word="a", n=1)
    assert set_field(row, "n", 5) == Row.of_kind(RowKind.UPDATE_AFTER, word="a", n=5)
    assert set_field(row, 1, 7).n == 7 and row.n == 1  # the input is never changed


def test_what_user_functions_print_goes_to_the_print_spool_in_a_local_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_job(compiled(PAIRS, op("m", "map", "src", function="api_fns:noisy"),
                             op("out", "print", "m")), print_spool=str(tmp_path))
    (vertex,) = plan.vertices.values()
    list(StreamTask(vertex.descriptor, 0, 0).invoke(iter(())))
    spooled = {path.name.split(".", 1)[1]: path.read_text() for path in tmp_path.iterdir()}
    assert spooled == {"stdout.done": "saw ('a', 110.1)\nsaw ('b', 2)\n",
                       "done": "('a', 110.1)\n('b', 2)\n"}
    assert capsys.readouterr().out == ""  # and stdout is the test's again
    print("after")
    assert capsys.readouterr().out == "after\n"


def test_a_side_output_edge_has_no_record_type_so_its_unconverted_records_are_pickled() -> None:
    plan = plan_job(compiled(
        PAIRS, op("p", "process", "src", function="mypkg.fns:split_odd",
                  outputType="TUPLE<STRING, INT>"),
        op("side", "filter", {"from": "p", "sideOutput": "odd"}, parallelism=2),
        op("main", "filter", "p", parallelism=2),
        op("o1", "discard", "side"), op("o2", "discard", "main"), parallelism=1))
    (producer,) = [v.descriptor for v in plan.vertices.values() if v.vertex.head.name == "src"]
    types = {out.consumer_name: out.record_type for out in producer.outputs}
    assert types == {"side": None, "main": T.TUPLE([T.STRING(), T.INT()])}
