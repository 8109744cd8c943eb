"""Executor shapes per slot sharing group, for Spark's stage-level scheduling.

On Kubernetes each slot sharing group gets executors of its own size: a ResourceProfile per
group, set on the RDDs of the group's JobVertices, lets dynamic allocation request pods of that
shape. A slot is one concurrent task, and Spark counts a task's CPUs in whole cores, so the
profile asks for ``slotsPerExecutor`` tasks of at least one core each. The *pod's* requests are
another setting: the compiled shape, fractional CPUs included, which the driver's
``SlotSharingGroupFeatureStep`` (docker/spark) applies from ``spark.dataflow.executor.profile.*``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dataflow_engine.graph.physical import ExecutorPlan
from dataflow_engine.quantity import memory_mebibytes, parse_quantity

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.resource import ResourceProfile

#: Spark configuration that turns profiles on (the operator's Kubernetes backend sets it).
#: (spark-submit drops settings from spark-defaults.conf whose names do not start with "spark.")
ENABLED_KEY = "spark.dataflow.resourceProfiles.enabled"
#: Per ResourceProfile id: ``.group``, ``.cpu``, ``.memory`` of its executor pods.
POD_SHAPE_PREFIX = "spark.dataflow.executor.profile."
#: Spark refuses an executor heap under 450 MiB; this leaves it some room.
MIN_HEAP_MIB = 512
#: Share of an executor's memory given to the JVM heap; the rest is the Python workers'.
HEAP_FRACTION = 0.6


@dataclass(frozen=True)
class ExecutorShape:
    #: Concurrent tasks x CPUs per task: Spark's view, in whole cores.
    cores: int
    task_cpus: int
    #: The pod's memory (request and limit), split into heap and overhead.
    memory_mib: int
    heap_mib: int
    #: The pod's CPU request, as compiled (may be fractional: "500m").
    pod_cpu: str
    pod_memory: str

    @property
    def overhead_mib(self) -> int:
        return max(0, self.memory_mib - self.heap_mib)


def executor_shape(executors: ExecutorPlan) -> ExecutorShape:
    per_slot_cpu = parse_quantity(executors.cpu) / executors.slots_per_executor
    task_cpus = max(1, math.ceil(per_slot_cpu))
    memory_mib = memory_mebibytes(parse_quantity(executors.memory))
    heap_mib = min(memory_mib, max(MIN_HEAP_MIB, int(memory_mib * HEAP_FRACTION)))
    return ExecutorShape(cores=task_cpus * executors.slots_per_executor, task_cpus=task_cpus,
                         memory_mib=memory_mib, heap_mib=heap_mib, pod_cpu=executors.cpu,
                         pod_memory=executors.memory)


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
        executor = (ExecutorResourceRequests().cores(shape.cores).memory(f"{shape.heap_mib}m")
                    .memoryOverhead(f"{shape.overhead_mib}m"))
        builder = ResourceProfileBuilder().require(executor)
        builder.require(TaskResourceRequests().cpus(shape.task_cpus))
        profiles[plan.slot_sharing_group] = builder.build
    return profiles


def pod_shape_conf(executors: list[ExecutorPlan],
                   profiles: dict[str, ResourceProfile]) -> dict[str, str]:
    """The feature step's settings: each profile id's group and pod shape."""
    conf = {}
    for plan in executors:
        shape = executor_shape(plan)
        prefix = f"{POD_SHAPE_PREFIX}{profiles[plan.slot_sharing_group].id}."
        conf[prefix + "group"] = plan.slot_sharing_group
        conf[prefix + "cpu"] = shape.pod_cpu
        conf[prefix + "memory"] = shape.pod_memory
    return conf


def publish_pod_shapes(sc: SparkContext, conf: dict[str, str]) -> None:
    """Set the shapes on the SparkContext's own configuration, which the executor pod allocator
    reads for every pod it creates (``getConf()`` would only return a copy)."""
    live = sc._jsc.sc().conf()
    for key, value in conf.items():
        live.set(key, value)
