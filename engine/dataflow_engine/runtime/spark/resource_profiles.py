"""Executor shapes per slot sharing group, for Spark's stage-level scheduling.

On Kubernetes each slot sharing group gets executors of its own size: a ResourceProfile per
group, set on the RDDs of the group's JobVertices, lets dynamic allocation request pods of that
shape. A slot is one concurrent task, and Spark counts a task's CPUs in whole cores, so the
profile asks for ``slotsPerExecutor`` tasks of at least one core each. The *pod's* requests are
another setting: the compiled shape, fractional CPUs included, which the driver's
``SlotSharingGroupFeatureStep`` (docker/spark) applies from ``spark.dataflow.executor.profile.*``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataflow_engine.graph.deployment import ExecutorPlan, executor_shape

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.resource import ResourceProfile

#: Per ResourceProfile id: ``.group``, ``.cpu``, ``.memory`` of its executor pods.
POD_SHAPE_PREFIX = "spark.dataflow.executor.profile."


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
