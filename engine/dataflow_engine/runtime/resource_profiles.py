"""Executor shapes per slot sharing group, for Spark's stage-level scheduling.

On Kubernetes each slot sharing group gets executors of its own size: a ResourceProfile per
group, set on the RDDs of the group's JobVertices, lets dynamic allocation request pods of that
shape. A slot is one concurrent task; Spark counts CPUs in whole cores, so a slot's CPU rounds
up to a whole core (a 500m slot runs on one core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dataflow_engine.graph.physical import ExecutorPlan
from dataflow_engine.quantity import memory_mebibytes, parse_quantity

if TYPE_CHECKING:
    from pyspark.resource import ResourceProfile

#: Spark configuration that turns profiles on (the operator's Kubernetes backend sets it).
ENABLED_KEY = "dataflow.resourceProfiles.enabled"


@dataclass(frozen=True)
class ExecutorShape:
    cores: int
    task_cpus: int
    memory_mib: int


def executor_shape(executors: ExecutorPlan) -> ExecutorShape:
    per_slot_cpu = parse_quantity(executors.cpu) / executors.slots_per_executor
    task_cpus = max(1, math.ceil(per_slot_cpu))
    return ExecutorShape(cores=task_cpus * executors.slots_per_executor, task_cpus=task_cpus,
                         memory_mib=memory_mebibytes(parse_quantity(executors.memory)))


def resource_profiles(executors: list[ExecutorPlan]) -> dict[str, ResourceProfile]:
    """One profile per slot sharing group, by group name."""
    from pyspark.resource import (
        ExecutorResourceRequests,
        ResourceProfileBuilder,
        TaskResourceRequests,
    )

    profiles = {}
    for plan in executors:
        shape = executor_shape(plan)
        executor = ExecutorResourceRequests().cores(shape.cores).memory(f"{shape.memory_mib}m")
        builder = ResourceProfileBuilder().require(executor)
        builder.require(TaskResourceRequests().cpus(shape.task_cpus))
        profiles[plan.slot_sharing_group] = builder.build
    return profiles
