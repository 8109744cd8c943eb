"""PyFlink's own programs run here with only their imports changed, and print what PyFlink 2.3
printed for them.

The examples ship inside the apache-flink 2.3.0 wheel (``hack/pyflink-examples`` takes them
from PyPI: Flink's code is not copied into this repository); the probes are programs of ours
that pin down types, key hashing and execution. What real PyFlink printed for each, at the
parallelism it ran with, is in ``pyflink_recordings/`` (``hack/record-pyflink-examples``).
Each program runs as ``dataflow run -p <that parallelism>`` runs it (in this process, on the
tier's Spark session), and prints exactly the recorded lines, compared as the recording says
where PyFlink's own output varies from run to run (line order, or which subtask after a
rebalance from a random channel).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.api._unsupported import NotSupportedError
from dataflow_engine.api.scripts import capture_script, run_script
from recorded_programs import PROBES, RECORDINGS, by_subtask, rewritten

pytestmark = pytest.mark.spark


#: Sections (``== title`` lines of a probe) whose lines are not compared, and why. Each is a
#: place where PyFlink's behaviour is its implementation's (a Java exception's text, its own
#: module names), or contradicts Flink's semantics, which this engine follows; the ones of
#: the second kind are listed in docs/differences-from-flink.md.
NOT_COMPARED = {
    "probes/type_printing.json": {
        "TUPLE(STRING, INT) with None in the INT field":
            "fails in both (a null INT field), each with its own message",
        "TUPLE(STRING, CHAR) from a collection":
            "PyFlink fails (ClassCastException: its coder hands Java a String for a CHAR); a "
            "CHAR field holds one character, as Flink's Types.CHAR does",
        "TUPLE(STRING, CHAR) from a map":
            "PyFlink prints a NUL character for each CHAR (its coders disagree on a char's "
            "width); here the character is printed",
        "undeclared (pickled) bytes record":
            "PyFlink's print() fails on a bytes record (it calls bytes.encode); here it "
            "prints as Python's str",
    },
    "probes/execute_semantics.json": {
        "(i) a map that raises":
            "a failed job raises py4j's Py4JJavaError in PyFlink, JobExecutionError here "
            "(both name the failing function's exception); records before the failing one "
            "may be printed here, as PyFlink's bundles do not",
        "(v) what execute() returns":
            "the result's classes live in this engine's modules (their methods are PyFlink's)",
    },
}


#: Of those, the sections whose job fails here as in PyFlink (the probe prints ``!!`` lines).
FAILS_IN_BOTH = {"probes/type_printing.json": ("TUPLE(STRING, INT) with None in the INT field",)}


def _recordings() -> list[Path]:
    """The recordings of programs that need nothing but PyFlink (the Kafka examples, under
    connectors/, need a broker: test_pyflink_kafka.py)."""
    return sorted(path for path in RECORDINGS.rglob("*.json")
                  if path.relative_to(RECORDINGS).parts[0] != "connectors")


def _run(program: Path, argv: list[str], parallelism: int, tmp_path: Path, spark: Any
         ) -> list[str]:
    """What the rewritten program prints when run as ``dataflow run -p PARALLELISM`` runs
    it: as its ``__main__``, here, its jobs on the shared session, with the recording's
    parallelism as the default (PyFlink's was the cores of the machine that recorded)."""
    printed = io.StringIO()
    with contextlib.chdir(tmp_path), contextlib.redirect_stdout(printed):
        run_script(rewritten(program, tmp_path), argv,
                   {"spark_session": spark, "progress": False}, parallelism)
    return printed.getvalue().splitlines()


def _sections(lines: list[str]) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = defaultdict(list)
    title = ""
    for line in lines:
        if line.startswith("== "):
            title = line.removeprefix("== ")
        sections[title].append(line)
    return sections


def _compare(recording: dict[str, Any], name: str, printed: list[str]) -> None:
    expected = recording["stdout"]
    skipped = NOT_COMPARED.get(name, {})
    if skipped:
        got_sections, expected_sections = _sections(printed), _sections(expected)
        assert list(got_sections) == list(expected_sections)
        for title in FAILS_IN_BOTH.get(name, ()):
            for lines in (expected_sections[title], got_sections[title]):
                assert any(line.startswith("!!") for line in lines), (title, lines)
        printed = [line for title, lines in got_sections.items() if title not in skipped
                   for line in lines]
        expected = [line for title, lines in expected_sections.items() if title not in skipped
                    for line in lines]
    varies = recording.get("varies", "")
    printed_groups = by_subtask(printed, "line order" not in varies)
    expected_groups = by_subtask(expected, "line order" not in varies)
    if "subtask prefixes" in varies:  # a rebalance from one subtask starts at a random channel
        assert sorted(printed_groups.values()) == sorted(expected_groups.values())
    else:
        assert printed_groups == expected_groups


@pytest.mark.parametrize("recorded", _recordings(),
                         ids=lambda path: str(path.relative_to(RECORDINGS)))
def test_a_pyflink_program_prints_what_pyflink_printed(recorded: Path, pyflink_examples: Path,
                                                       tmp_path: Path, spark: Any) -> None:
    recording = json.loads(recorded.read_text())
    assert recording["exit_code"] == 0  # each ran to its end in PyFlink
    name = str(recorded.relative_to(RECORDINGS))
    program = (PROBES / Path(recording["program"]).name if recording["source"] == "probe"
               else pyflink_examples / recording["program"])
    printed = _run(program, recording["argv"], recording["parallelism"], tmp_path, spark)
    _compare(recording, name, printed)


def test_word_count_writes_what_it_prints_to_part_files(pyflink_examples: Path, tmp_path: Path,
                                                       spark: Any) -> None:
    """word_count's --output goes through PyFlink's FileSink builder: part files named by its
    OutputFileConfig, in an hourly bucket (Flink's default DateTimeBucketAssigner), holding
    the lines the recording printed."""
    recording = json.loads((RECORDINGS / "word_count.json").read_text())
    output = tmp_path / "out"
    printed = _run(pyflink_examples / "word_count.py", ["--output", str(output)],
                   recording["parallelism"], tmp_path, spark)
    assert printed == recording["stdout"][:2]  # no "Printing result to stdout" line
    (part,) = output.glob("*/*")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d--\d\d", part.parent.name), part
    assert re.fullmatch(r"prefix-\d{5}\.ext", part.name), part
    assert part.read_text().splitlines() == recording["stdout"][3:]


def test_dataflow_run_runs_a_pyflink_program_as_python_does(pyflink_examples: Path,
                                                           tmp_path: Path) -> None:
    """``dataflow run -p 2 program.py`` runs the program itself in a process of its own,
    each execute() on the command's Spark settings, so it prints what PyFlink prints."""
    recording = json.loads((RECORDINGS / "state_access.json").read_text())
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-m", "dataflow_engine.cli", "run", "--master", "local[2]",
         "--no-progress", "-p", str(recording["parallelism"]),
         str(rewritten(pyflink_examples / "state_access.py", tmp_path))],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == recording["stdout"]
    assert "FINISHED" in done.stderr  # the command's summary of the job


@pytest.mark.parametrize(("example", "refusal"), [
    ("connectors/elasticsearch.py", "elasticsearch.Elasticsearch6SinkBuilder is not supported "
                                    "yet by dataflow_engine.api: there is no Elasticsearch "
                                    "connector yet"),
    ("connectors/pulsar.py", "pulsar.PulsarSource is not supported yet by dataflow_engine.api: "
                             "there is no Pulsar connector yet")])
def test_an_example_of_a_connector_not_here_imports_and_is_refused_where_it_is_used(
        example: str, refusal: str, pyflink_examples: Path, tmp_path: Path) -> None:
    program = rewritten(pyflink_examples / example, tmp_path)
    with pytest.raises(NotSupportedError) as refused:
        capture_script(program)
    assert refusal in str(refused.value)
