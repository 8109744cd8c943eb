"""The local print relay: spool lines reach stdout once, closed spool files go away, and a
subtask's print sinks show in node order however the relay's passes fall."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from graph_specs import compiled, op

from dataflow_engine.runtime.spark.print_relay import PrintRelay
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.streamoperators.stream_operators import PrintSinkOperator
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask

pytestmark = pytest.mark.unit


def test_lines_are_relayed_once_and_a_closed_spool_file_is_forgotten(
        capsys: pytest.CaptureFixture[str]) -> None:
    relay = PrintRelay(interval=3600)  # drained by hand below
    try:
        spool = os.path.join(relay.directory, "7-0-0-abc.out")
        with open(spool, "w") as f:
            f.write("1> a\n1> b")  # the second line is not complete yet
        relay.drain()
        with open(spool, "a") as f:
            f.write("\n1> c\n")
        os.replace(spool, spool.removesuffix(".out") + ".done")  # the sink closed it
        relay.drain()
        relay.drain()
        assert capsys.readouterr().out == "1> a\n1> b\n1> c\n"
        assert os.listdir(relay.directory) == []
    finally:
        relay.close()


def test_one_pass_relays_its_files_by_node_then_subtask_numerically(
        capsys: pytest.CaptureFixture[str]) -> None:
    relay = PrintRelay(interval=3600)
    try:
        for name in ("12-0-0-a.done", "4-10-0-b.done", "4-2-0-c.done", "slot-0-0-d.stdout",
                     "9-0-0-e.out"):
            with open(os.path.join(relay.directory, name), "w") as f:
                f.write(f"{name.split('-', 2)[:2]}\n")
        relay.drain()
        assert capsys.readouterr().out.splitlines() == [
            "['4', '2']", "['4', '10']", "['9', '0']", "['12', '0']", "['slot', '0']"]
    finally:
        relay.close()


def test_a_tasks_print_sinks_flush_in_node_order_though_a_later_branch_finishes_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """src -> (print "first", map -> print "second"): the chain finishes head first, the
    map's branch before the print chained before it; the relay must still see the first
    sink's lines no later than the second's, whenever its pass comes."""
    flushed: list[str] = []
    flush = PrintSinkOperator.flush

    def recorded(sink: PrintSinkOperator) -> None:
        flushed.append(sink.config.name)
        flush(sink)

    monkeypatch.setattr(PrintSinkOperator, "flush", recorded)
    source = {"name": "src", "type": "collection", "args": {"elements": ["x", "y"]}}
    plan = plan_job(compiled(source, op("first", "print", "src", args={"identifier": "a"}),
                             op("shout", "map", "src", function="upper"),
                             op("second", "print", "shout", args={"identifier": "b"})),
                    print_spool=str(tmp_path))
    (vertex,) = plan.vertices.values()
    list(StreamTask(vertex.descriptor, 0, 0).invoke(iter(())))
    assert flushed == ["first", "second"]
    printed = sorted(path.read_text() for path in tmp_path.glob("*.done"))
    assert printed == ["", "a> x\na> y\n", "b> X\nb> Y\n"]  # and the task's own stdout
