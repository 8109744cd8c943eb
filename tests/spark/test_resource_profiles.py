"""Stage-level scheduling: one executor shape (ResourceProfile) per slot sharing group."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.graph.deployment import executor_shape
from dataflow_engine.runtime.spark.resource_profiles import resource_profiles
from dataflow_engine.spec.model import DataflowJobSpec

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


def test_the_pod_shape_is_the_compiled_one_and_the_heap_fits_inside_it() -> None:
    shapes = {e.slot_sharing_group: executor_shape(e) for e in _executors()}
    # Spark's cores are whole, but the pod asks for exactly what the plan compiled.
    assert (shapes["default"].pod_cpu, shapes["default"].pod_memory) == ("1", "2Gi")
    assert (shapes["heavy"].pod_cpu, shapes["heavy"].pod_memory) == ("6", "12Gi")
    for shape in shapes.values():
        assert shape.heap_mib + shape.overhead_mib == shape.memory_mib
        assert 512 <= shape.heap_mib < shape.memory_mib


def test_a_small_executor_keeps_the_minimum_heap() -> None:
    from dataflow_engine.graph.deployment import ExecutorPlan

    shape = executor_shape(ExecutorPlan("g", count=1, slots_per_executor=2, cpu="500m",
                                        memory="768Mi"))
    assert (shape.cores, shape.task_cpus, shape.pod_cpu) == (2, 1, "500m")
    assert (shape.heap_mib, shape.overhead_mib) == (512, 256)


def test_profiles_request_those_shapes() -> None:
    profiles = resource_profiles(_executors())
    heavy = profiles["heavy"]
    assert heavy.executorResources["cores"].amount == 6
    memory = heavy.executorResources["memory"].amount
    assert memory + heavy.executorResources["memoryOverhead"].amount == 12288
    assert memory == executor_shape(_executors()[1]).heap_mib
    assert heavy.taskResources["cpus"].amount == 3
    assert profiles["default"].executorResources["cores"].amount == 2


def test_pod_shapes_are_published_per_profile_id_on_the_live_conf(spark: Any) -> None:
    from dataflow_engine.runtime.spark.resource_profiles import (
        POD_SHAPE_PREFIX,
        pod_shape_conf,
        publish_pod_shapes,
    )

    executors = _executors()
    profiles = resource_profiles(executors)
    conf = pod_shape_conf(executors, profiles)
    heavy = f"{POD_SHAPE_PREFIX}{profiles['heavy'].id}."
    assert (conf[heavy + "group"], conf[heavy + "cpu"], conf[heavy + "memory"]) == (
        "heavy", "6", "12Gi")
    assert len(conf) == 6
    publish_pod_shapes(spark.sparkContext, conf)
    # The context's own configuration (what Spark's executor pod allocator reads), not a copy.
    live = spark.sparkContext._jsc.sc().conf()
    assert live.get(heavy + "memory") == "12Gi"
    assert spark.sparkContext.getConf().get(heavy + "memory") == "12Gi"
