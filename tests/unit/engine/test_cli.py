"""``dataflow compile``: every layer in every format, the JSON contract, errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dataflow_engine.cli import main

pytestmark = pytest.mark.unit
EXAMPLES = Path(__file__).parents[3] / "examples"
WORDCOUNT = str(EXAMPLES / "wordcount.yaml")


def _json(capsys: pytest.CaptureFixture[str], layer: str) -> dict:  # type: ignore[type-arg]
    assert main(["compile", WORDCOUNT, "--layer", layer, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_job_layer_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    job = _json(capsys, "job")
    assert [(v["name"], v["operators"], v["parallelism"]) for v in job["jobVertices"]] == [
        ("Source: Collection Source", ["source"], 1),
        ("Flat Map", ["tokenize"], 2),
        ("Keyed Aggregation -> Filter -> Sink: Print to Std. Out",
         ["counts", "frequent", "out"], 2)]
    ids = [v["id"] for v in job["jobVertices"]]
    assert [(e["source"], e["target"], e["partitioner"], e["distributionPattern"])
            for e in job["jobEdges"]] == [(ids[0], ids[1], "REBALANCE", "ALL_TO_ALL"),
                                          (ids[1], ids[2], "HASH", "ALL_TO_ALL")]
    assert {"maxParallelism", "slotSharingGroup"} <= set(job["jobVertices"][0])


def test_execution_and_physical_layers(capsys: pytest.CaptureFixture[str]) -> None:
    execution = _json(capsys, "execution")
    assert (execution["numExecutionVertices"], execution["numPipelinedRegions"]) == (5, 5)
    last = execution["executionVertices"][-1]
    assert last["subtask"] == 1 and last["inputs"][0]["subtasks"] == [[0, 2]]
    physical = _json(capsys, "physical")
    assert physical["slots"] == {"default": 2} and physical["totalSlots"] == 2
    assert physical["executors"] == [{"slotSharingGroup": "default", "count": 1,
                                      "slotsPerExecutor": 2, "cpu": "2", "memory": "2Gi"}]
    everything = _json(capsys, "all")
    assert set(everything) == {"schemaVersion", "stream", "job", "execution", "physical"}


@pytest.mark.parametrize(("fmt", "marker"), [
    ("text", "JobGraph 'wordcount': 3 JobVertices, 2 JobEdges"),
    ("dot", "subgraph cluster_2"),
    ("mermaid", "flowchart LR"),
])
def test_text_and_pictures(capsys: pytest.CaptureFixture[str], fmt: str, marker: str) -> None:
    assert main(["compile", WORDCOUNT, "--layer", "all", "--format", fmt]) == 0
    assert marker in capsys.readouterr().out


def test_python_job_compiles_like_the_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(EXAMPLES / "wordcount.py"), "--format", "json"]) == 0
    from_python = json.loads(capsys.readouterr().out)
    assert from_python == _json(capsys, "job")


def test_a_bad_manifest_exits_non_zero_with_the_field_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((EXAMPLES / "wordcount.yaml").read_text().replace(
        "inputs: [counts]", "inputs: [countz]"))
    result = subprocess.run([sys.executable, "-m", "dataflow_engine.cli", "compile", str(bad)],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "spec.pipeline[3].inputs[0].from: operator 'frequent': unknown input 'countz'" in (
        result.stderr)


PROGRAM = '''
import sys
from dataflow_engine.api.common import Types
from dataflow_engine.api.datastream import StreamExecutionEnvironment

print("building with", sys.argv[1:])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
env.from_collection([("a", 1)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])) \\
    .key_by(lambda pair: pair[0]).sum(1).print()
env.execute("first")
raise AssertionError("dataflow compile stops the program at its first execute()")
'''


def test_a_pyflink_program_compiles_as_its_first_execute(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    assert main(["compile", str(program), "--layer", "stream", "--", "3"]) == 0
    captured = capsys.readouterr()
    # the program's own output, and its arguments, go to stderr: stdout is the plan's
    assert captured.err.splitlines()[0] == "building with ['3']"
    out = captured.out.splitlines()
    assert out[0] == "StreamGraph 'first' (STREAMING, chaining enabled)"
    assert "sum-2" in out[2] and "parallelism=3" in out[2]
    assert "keyType=PICKLED_BYTE_ARRAY" in "\n".join(out)


def test_a_program_that_never_executes_or_a_module_with_arguments_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idle = tmp_path / "idle.py"
    idle.write_text("print('nothing to run')\n")
    assert main(["compile", str(idle)]) == 2
    assert "the program ended without calling execute(): it defines no job" in (
        capsys.readouterr().err)
    assert main(["compile", WORDCOUNT, "extra"]) == 2
    assert "only a program run as a script takes arguments, not ['extra']" in (
        capsys.readouterr().err)


def test_a_file_with_a_job_callable_is_not_a_script(tmp_path: Path) -> None:
    from dataflow_engine.api.scripts import is_script

    for text, script in (("def job():\n    pass\n", False), ("job = make()\n", False),
                         ("class job: ...\n", False), ("env.execute()\n", True),
                         ("def main():\n    pass\n", True)):
        (tmp_path / "p.py").write_text(text)
        assert is_script(tmp_path / "p.py") is script, text


NAMED = '''"""A program whose functions have names."""
import sys
from dataflow_engine.api.common import Types
from dataflow_engine.api.datastream import StreamExecutionEnvironment


def shout(word):
    return word.upper()


def main():
    print("building")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(sys.argv[1:], type_info=Types.STRING()) \\
        .map(shout, output_type=Types.STRING()).print()
    env.execute()


if __name__ == "__main__":
    main()
'''


def test_a_pyflink_program_becomes_a_manifest_that_ships_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "shout_words.py"
    program.write_text(NAMED)
    assert main(["manifest", str(program), "a", "b"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "building\n"
    config_map, job = yaml.safe_load_all(captured.out)
    assert config_map["metadata"] == {"name": "shout-words-program"}
    assert config_map["data"] == {"shout_words.py": NAMED}
    assert job["metadata"] == {"name": "shout-words"}
    assert job["spec"]["pyFiles"] == [{"configMap": "shout-words-program",
                                       "key": "shout_words.py"}]
    source, shout, _ = job["spec"]["pipeline"]
    assert source["args"]["elements"] == ["a", "b"]  # the program's arguments
    assert shout["function"] == "shout_words:shout"
    assert main(["manifest", str(program), "--name", "loud"]) == 0
    assert "name: loud-program" in capsys.readouterr().out


def test_a_program_that_cannot_be_a_manifest_is_refused_naming_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lambdas = tmp_path / "lambdas.py"
    lambdas.write_text(NAMED.replace("map(shout,", "map(lambda word: word,"))
    assert main(["manifest", str(lambdas)]) == 2
    assert ("spec.pipeline[1].function: operator 'map-2': map function "
            "'main.<locals>.<lambda>' must be an importable top-level function") in (
        capsys.readouterr().err)
    for name, tail, line in (("runs_on_import", "main()", 19),
                             ("assigns_a_run", "result = main()", 19),
                             ("executes_in_a_loop", "for _ in range(1):\n    env.execute()", 20)):
        program = tmp_path / f"{name}.py"
        program.write_text(NAMED.replace('if __name__ == "__main__":\n    main()', tail))
        assert main(["manifest", str(program)]) == 2
        assert f"{program}:{line}: the driver imports the program for its functions" in (
            capsys.readouterr().err), name
    (tmp_path / "helpers.py").write_text("def shout(word):\n    return word.upper()\n")
    imports_beside = tmp_path / "imports_beside.py"
    imports_beside.write_text("import logging\nfrom helpers import shout\n" + NAMED)
    assert main(["manifest", str(imports_beside)]) == 2
    assert "imports 'helpers' from beside it" in capsys.readouterr().err
    guarded = tmp_path / "guarded.py"  # definitions, constants and library calls are fine
    guarded.write_text("import logging\nlogging.getLogger(__name__)\nLIMIT = max(1, 2)\n"
                       + NAMED)
    assert main(["manifest", str(guarded)]) == 0
    capsys.readouterr()
