"""Sinks: file (exactly once across a task retry), print (Flink's prefixes), collect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.graph.states import ExecutionState, JobStatus

pytestmark = pytest.mark.spark


def file_job(path: Path, fmt: str, function: str = "spark_fns:FailFirstAttempt") -> dict[str, Any]:
    return {
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 20}},
            {"name": "pair", "type": "map", "inputs": ["source"], "function": function},
            {"name": "files", "type": "file", "inputs": ["pair"],
             "args": {"path": str(path), "format": fmt}},
        ],
    }


def test_file_sink_writes_exactly_once_when_the_first_attempt_fails(run: Any,
                                                                    tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(file_job(out, "json"))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(p.name for p in out.iterdir()) == ["part-00000", "part-00001"]  # no temp files
    lines = [json.loads(line) for p in sorted(out.iterdir()) for line in p.read_text().splitlines()]
    assert sorted(lines) == [[v, f"v{v}"] for v in range(1, 21)]  # tuples as JSON arrays
    vertex = result.vertices[0]
    # Subtask 0 failed once and Spark retried it: the status shows the second attempt.
    assert [(s.state, s.attempt) for s in vertex.subtasks] == [
        (ExecutionState.FINISHED, 1), (ExecutionState.FINISHED, 0)]
    assert vertex.subtasks[0].records_in == 0 and vertex.subtasks[0].records_out == 0
    assert result.operator_metrics()["files"] == (20, 0)


def test_file_sink_text_format_and_rerun_replaces_parts(run: Any, tmp_path: Path) -> None:
    out = tmp_path / "text"
    for _ in range(2):
        result = run(file_job(out, "text", function="square"))
        assert result.job_status is JobStatus.FINISHED, result.error
    parts = sorted(out.iterdir())
    assert [p.name for p in parts] == ["part-00000", "part-00001"]
    assert [line for p in parts for line in p.read_text().splitlines()] == [
        str(v * v) for v in range(1, 21)]


@pytest.mark.parametrize(("parallelism", "identifier", "prefixes"), [
    (1, None, {""}),
    (2, None, {"1> ", "2> "}),
    (1, "sink", {"sink> "}),
    (2, "sink", {"sink:1> ", "sink:2> "}),
])
def test_print_sink_prefixes_like_flink(run: Any, capsys: pytest.CaptureFixture[str],
                                        parallelism: int, identifier: str | None,
                                        prefixes: set[str]) -> None:
    args = {"identifier": identifier} if identifier else {}
    spec = {
        "parallelism": parallelism,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 6}},
            {"name": "out", "type": "print", "inputs": ["source"], "args": args},
        ],
    }
    capsys.readouterr()
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    lines = capsys.readouterr().out.splitlines()
    found = {}
    for line in lines:
        prefix, _, value = line.rpartition(" ") if " " in line else ("", "", line)
        found[int(value)] = prefix + " " if prefix else ""
    assert sorted(found) == list(range(1, 7))
    assert set(found.values()) == prefixes
    if parallelism == 2:
        assert all(found[v] == next(p for p in prefixes if p.endswith(f"{1 + (v > 3)}> "))
                   for v in found)


def test_collect_and_discard_sinks(run: Any) -> None:
    spec = {
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 100}},
            {"name": "even", "type": "filter", "inputs": ["source"], "function": "is_even"},
            {"name": "kept", "type": "collect", "inputs": ["even"]},
            {"name": "dropped", "type": "discard", "inputs": ["source"]},
        ],
    }
    result = run(spec)
    assert result.collected == {"kept": list(range(2, 101, 2))}
    assert result.operator_metrics()["dropped"] == (100, 0)
