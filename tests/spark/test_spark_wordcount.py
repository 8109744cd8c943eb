"""Word count on Spark: exact results in both modes and at any parallelism; the CLI."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.compiler.manifest import load_manifest
from dataflow_engine.functions.library import split_words
from dataflow_engine.graph.states import ExecutionState, JobStatus

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
LINES = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
    "And by opposing end them?--To die,--to sleep,--",
    "No more; and by a sleep to say we end",
]
EXPECTED = Counter(word for line in LINES for word, _ in split_words(line))


def wordcount(mode: str, *, parallelism: int = 2, source: dict[str, Any] | None = None,
              sink: str = "collect") -> dict[str, Any]:
    return {
        "parallelism": parallelism,
        "runtimeMode": mode,
        "pipeline": [
            source or {"name": "source", "type": "collection", "parallelism": 1,
                       "args": {"elements": LINES}},
            {"name": "tokenize", "type": "flat_map", "inputs": ["source"],
             "function": "split_words"},
            {"name": "counts", "type": "sum", "inputs": [{"from": "tokenize", "keyBy": 0}],
             "args": {"field": 1}},
            {"name": "out", "type": sink, "inputs": ["counts"]},
        ],
    }


def test_batch_emits_one_final_count_per_word(run: Any) -> None:
    result = run(wordcount("BATCH"))
    assert result.job_status is JobStatus.FINISHED, result.error
    assert sorted(result.collected["out"]) == sorted(EXPECTED.items())
    metrics = result.operator_metrics()
    words = sum(EXPECTED.values())
    assert metrics["tokenize"] == (len(LINES), words)
    assert metrics["counts"] == (words, len(EXPECTED))
    assert metrics["out"] == (len(EXPECTED), 0)


def test_streaming_emits_a_running_count_per_record(run: Any) -> None:
    result = run(wordcount("STREAMING"))
    assert result.job_status is JobStatus.FINISHED, result.error
    emitted = Counter(map(tuple, result.collected["out"]))
    expected = Counter((word, n) for word, count in EXPECTED.items() for n in range(1, count + 1))
    assert emitted == expected
    assert result.operator_metrics()["counts"] == (sum(EXPECTED.values()),) * 2


def test_automatic_mode_is_batch_for_bounded_sources(run: Any) -> None:
    result = run(wordcount("AUTOMATIC"))
    assert result.status.runtime_mode == "BATCH"
    assert sorted(result.collected["out"]) == sorted(EXPECTED.items())


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter[str]]:
    """Two files of random lines (one without a final newline), and their word counts."""
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(300)]
    directory = tmp_path_factory.mktemp("corpus")
    counts: Counter[str] = Counter()
    for index, lines in enumerate((400, 250)):
        text = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12)))
                for _ in range(lines)]
        for line in text:
            counts.update(word for word, _ in split_words(line))
        (directory / f"part-{index}.txt").write_text("\n".join(text) + ("\n" if index else ""))
    return directory, counts


@pytest.mark.parametrize("mode", ["BATCH", "STREAMING"])
def test_identical_results_at_parallelism_1_2_and_7(run: Any, mode: str,
                                                    text_corpus: tuple[Path, Counter[str]]
                                                    ) -> None:
    directory, counts = text_corpus
    results = []
    for parallelism in (1, 2, 7):
        source = {"name": "source", "type": "text", "args": {"path": str(directory)}}
        result = run(wordcount(mode, parallelism=parallelism, source=source))
        assert result.job_status is JobStatus.FINISHED, result.error
        assert all(v.parallelism == parallelism for v in result.vertices)
        results.append(Counter(map(tuple, result.collected["out"])))
    assert results[0] == results[1] == results[2]
    if mode == "BATCH":
        assert dict(results[0]) == {item: 1 for item in counts.items()}
    else:
        assert sum(results[0].values()) == sum(counts.values())


def test_every_subtask_finishes_with_counts(run: Any) -> None:
    result = run(wordcount("BATCH", parallelism=3))
    for vertex in result.vertices:
        assert vertex.state is ExecutionState.FINISHED
        assert [s.index for s in vertex.subtasks] == list(range(vertex.parallelism))
        assert all(s.state is ExecutionState.FINISHED and s.attempt == 0 for s in vertex.subtasks)
    source, tokenize, counts = result.vertices
    assert source.records_out == len(LINES)
    assert tokenize.records_in == len(LINES)
    assert counts.records_in == tokenize.records_out == sum(EXPECTED.values())


def test_dataflow_run_prints_wordcount_example(tmp_path: Path) -> None:
    status_file = tmp_path / "status.json"
    process = subprocess.run(
        [sys.executable, "-m", "dataflow_engine.runtime.client.command",
         str(REPO / "examples" / "wordcount.yaml"), "--master", "local[2]", "--no-progress",
         "--status-file", str(status_file)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    printed = {}
    for line in process.stdout.splitlines():
        match = re.fullmatch(r"([12])> \('(\w+)', (\d+)\)", line)
        assert match, f"unexpected stdout line {line!r}"
        printed[match[2]] = int(match[3])
    manifest = load_manifest(REPO / "examples" / "wordcount.yaml")
    manifest_lines = manifest.spec.pipeline[0].args["elements"]
    counts = Counter(w for line in manifest_lines for w, _ in split_words(line))
    assert printed == {w: n for w, n in counts.items() if n > 1}
    assert "FINISHED" in process.stderr  # the summary table
    document = json.loads(status_file.read_text())
    assert document["jobName"] == "wordcount" and document["jobStatus"] == "FINISHED"


def test_dataflow_run_rejects_bad_targets(tmp_path: Path) -> None:
    from dataflow_engine.runtime.client.command import main

    assert main([str(tmp_path / "missing.yaml")]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: dataflow.io/v1alpha1\nkind: DataflowJob\nmetadata: {name: x}\n"
                   "spec: {pipeline: [{name: a, type: map}]}\n")
    assert main([str(bad)]) == 2
    assert main(["no_such_module_xyz:job"]) == 2
    assert main(["--conf", "novalue", str(REPO / "examples" / "wordcount.yaml")]) == 2


@pytest.mark.parametrize("target", ["spark_fns:wordcount_spec", "spark_fns:EnvironmentLike"])
def test_dataflow_run_module_callable(spark: Any, capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path, target: str) -> None:
    from dataflow_engine.runtime.client.command import main

    status_file = tmp_path / "status.json"
    capsys.readouterr()
    assert main([target, "--no-progress", "--status-file", str(status_file)]) == 0
    captured = capsys.readouterr()
    assert sorted(line.split("> ", 1)[1] for line in captured.out.splitlines()) == [
        "('a', 3)", "('b', 1)", "('c', 1)"]
    assert all(line.startswith(("wc:1> ", "wc:2> ")) for line in captured.out.splitlines())
    assert json.loads(status_file.read_text())["jobName"] == "spark-fns"
    assert "FINISHED" in captured.err


def test_relative_file_sink_path_is_the_drivers(run: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_text("a b\nb\n")
    spec = wordcount("BATCH", source={"name": "source", "type": "text",
                                      "args": {"path": "in.txt"}}, sink="collect")
    spec["pipeline"][-1] = {"name": "out", "type": "file", "inputs": ["counts"],
                            "args": {"path": "out", "format": "json"}}
    result = run(spec)
    assert result.job_status is JobStatus.FINISHED, result.error
    lines = sorted(line for p in (tmp_path / "out").iterdir() for line in p.read_text().split())
    assert lines == sorted(['["a",', '1]', '["b",', '2]'])
