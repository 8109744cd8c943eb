"""A PyFlink program becomes a DataflowJob: ``dataflow manifest program.py`` gives the
ConfigMap holding the program and the job of its first execute(); applied with ``kubectl``,
the operator runs it and its driver prints what real PyFlink printed for the program."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kube_helpers import Kube
from operator_helpers import Operators, status, wait_condition
from recorded_programs import PREFIX, PROBES, RECORDINGS, by_subtask, rewritten

pytestmark = pytest.mark.k8s


def test_a_pyflink_program_applied_as_a_manifest_prints_what_pyflink_printed(
        kube: Kube, namespace: str, operators: Operators, tmp_path: Path) -> None:
    recording = json.loads((RECORDINGS / "probes" / "named_functions.json").read_text())
    program = rewritten(PROBES / "named_functions.py", tmp_path)
    made = subprocess.run([sys.executable, "-m", "dataflow_engine.cli", "manifest",
                           str(program)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert made.returncode == 0, made.stderr
    manifest = tmp_path / "named-functions.yaml"
    manifest.write_text(made.stdout)
    operators.start(backend="local")
    kube.kubectl("apply", "--namespace", namespace, "-f", str(manifest))
    wait_condition(kube, namespace, "named-functions", "Succeeded", timeout=240)
    final = status(kube, namespace, "named-functions")
    log = Path(final["driver"]["logs"]).read_text()
    printed = [line for line in log.splitlines() if PREFIX.match(line)]
    assert by_subtask(printed) == by_subtask(recording["stdout"]), log[-3000:]
    # Every subtask of the program's set_parallelism(2) ran, as the status shows them.
    assert [v["subtasks"] for v in final["vertices"]] == ["F", "FF"]
