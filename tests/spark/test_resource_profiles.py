"""Stage-level scheduling: one executor shape (ResourceProfile) per slot sharing group."""

from __future__ import annotations

import pytest

from dataflow_engine.compiler import compile_job
from dataflow_engine.runtime.resource_profiles import executor_shape, resource_profiles
from dataflow_engine.spec import DataflowJobSpec

pytestmark = pytest.mark.spark


def _executors() -> list:  # type: ignore[type-arg]
    spec = DataflowJobSpec.model_validate({
        "parallelism": 4, "slotsPerExecutor": 2,
        "slotSharingGroups": [{"name": "default", "cpu": "500m", "memory": "1Gi"},
                              {"name": "heavy", "cpu": "3", "memory": "6Gi"}],
        "pipeline": [
            {"name": "src", "type": "sequence", "args": {"from": 1, "to": 9}},
            {"name": "sq", "type": "map", "function": "square", "inputs": ["src"],
             "slotSharingGroup": "heavy"},
            {"name": "out", "type": "discard", "inputs": ["sq"]}]})
    return compile_job(spec, "profiles").slot_plan.executors


def test_each_group_gets_its_own_executor_shape() -> None:
    shapes = {e.slot_sharing_group: executor_shape(e) for e in _executors()}
    # Two slots per executor: fractional slot CPUs round up to whole cores per task.
    assert (shapes["default"].cores, shapes["default"].task_cpus,
            shapes["default"].memory_mib) == (2, 1, 2048)
    assert (shapes["heavy"].cores, shapes["heavy"].task_cpus,
            shapes["heavy"].memory_mib) == (6, 3, 12288)


def test_profiles_request_those_shapes() -> None:
    profiles = resource_profiles(_executors())
    heavy = profiles["heavy"]
    assert heavy.executorResources["cores"].amount == 6
    assert heavy.executorResources["memory"].amount == 12288
    assert heavy.taskResources["cpus"].amount == 3
    assert profiles["default"].executorResources["cores"].amount == 2
