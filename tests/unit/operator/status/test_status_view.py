"""`dataflow status`: what it prints of a DataflowJob's status."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dataflow_engine.compiler.validation import parse_spec
from dataflow_operator.plan import build_plan
from dataflow_operator.status.view import render_status

pytestmark = pytest.mark.unit


def test_chains_are_shown_with_the_jobs_own_operator_names() -> None:
    spec = parse_spec({"parallelism": 2, "pipeline": [
        {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 9}},
        {"name": "double", "type": "map", "function": "square", "inputs": ["numbers"]},
        {"name": "shift", "type": "map", "function": "identity", "inputs": ["double"],
         "startNewChain": True},
        {"name": "out", "type": "discard", "inputs": ["shift"]}]})
    plan = build_plan("maps", "ns", spec).status
    vertices = [{"id": v.id, "name": v.name, "parallelism": v.parallelism,
                 "states": {"FINISHED": 2}, "subtasks": "FF", "attempts": "0*2"}
                for v in plan.job_vertices]
    text = render_status({"metadata": {"name": "maps", "namespace": "ns"},
                          "status": {"plan": plan.model_dump(by_alias=True),
                                     "vertices": vertices}})
    # Two vertices Flink would both call by their operators' kinds...
    assert "Source: Sequence Source -> Map" in text and "Map -> Sink: Discarding Sink" in text
    # ... told apart by the names in the job.
    assert "operators: numbers, double" in text
    assert "operators: shift, out" in text


def test_the_driver_log_and_spark_ui_are_shown_as_the_backend_gave_them() -> None:
    from dataflow_operator.backends.kubernetes import KubernetesBackend
    from dataflow_operator.resources.meta import JobRef

    job = JobRef(name="wc", namespace="team-a", uid="u")
    driver = KubernetesBackend.driver_status(job)
    text = render_status({"metadata": {"name": "wc", "namespace": "team-a"},
                          "status": {"driver": driver.model_dump(by_alias=True)}})
    assert "driver log: kubectl logs --namespace team-a wc-driver" in text
    assert ("Spark UI:   kubectl port-forward --namespace team-a service/wc-driver 4040:4040, "
            "then http://localhost:4040") in text


def test_every_help_shows_its_defaults() -> None:
    for command in (["operator"], ["compile"], ["run"], ["status"]):
        result = subprocess.run([sys.executable, "-m", "dataflow_engine.cli", *command, "--help"],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "(default:" in result.stdout, command


def test_a_continuous_jobs_checkpoints_are_shown() -> None:
    checkpoints = {"epochs": 40, "completed": 4, "failed": 0,
                   "restoredFrom": "/mnt/chk/chk-8",
                   "lastCompleted": {"id": 40, "time": "2026-11-23T22:09:50Z",
                                     "stateSize": 2048, "path": "/mnt/chk/chk-40"}}
    text = render_status({"metadata": {"name": "clicks", "namespace": "ns"},
                          "status": {"jobStatus": "RUNNING", "checkpoints": checkpoints}})
    assert ("checkpoints: 4 completed, 0 failed, 40 epochs; last 40 at 2026-11-23T22:09:50Z "
            "(2048 bytes, /mnt/chk/chk-40); restored from /mnt/chk/chk-8") in text
