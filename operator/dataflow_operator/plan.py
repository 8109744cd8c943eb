"""The operator's view of a compiled job: the plan summary in status and the plan ConfigMap."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from dataflow_engine.compiler.compile import CompiledJob, compile_job
from dataflow_engine.compiler.manifest import dump_manifest
from dataflow_engine.compiler.policy import STRICT, JobPolicy, check_policy
from dataflow_engine.render import Layer
from dataflow_engine.render.plan_json import plan_json, slot_plan_json
from dataflow_engine.spec.model import DataflowJob, DataflowJobSpec, ObjectMeta
from dataflow_operator.status.model import PlannedExecutors, PlannedVertex, PlanStatus

#: Spec fields that change how a job is deployed but not what it computes.
_DEPLOYMENT_ONLY = {"suspend", "ttl_seconds_after_finished", "job"}


@dataclass(frozen=True)
class JobPlan:
    compiled: CompiledJob
    status: PlanStatus
    #: ConfigMap data: the manifest the driver runs and the plan it must agree with.
    files: dict[str, str]


#: The manifest the driver runs, in the plan ConfigMap.
JOB_FILE_KEY = "job.yaml"
#: The job's pip requirements, in the plan ConfigMap (and so beside job.yaml for the driver).
REQUIREMENTS_FILE = "requirements.txt"


def plan_hash(spec: DataflowJobSpec) -> str:
    """Changes whenever the deployed job would differ (everything but ``suspend``, the
    clean-up TTL and the lifecycle settings of ``job``)."""
    data = spec.model_dump(mode="json", by_alias=True, exclude=_DEPLOYMENT_ONLY)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def build_plan(name: str, namespace: str, spec: DataflowJobSpec,
               policy: JobPolicy = STRICT) -> JobPlan:
    """Checks the job against the operator's policy and compiles the topology; raises SpecError.
    Never imports user functions."""
    check_policy(spec, policy)
    compiled = compile_job(spec, name, policy.max_execution_vertices)
    status = PlanStatus(
        hash=plan_hash(spec),
        job_vertices=[
            PlannedVertex(id=v.id, name=v.name, operators=[n.name for n in v.operators],
                          parallelism=v.parallelism, slot_sharing_group=v.slot_sharing_group)
            for v in compiled.job_graph.vertices
        ],
        slots=dict(compiled.slot_plan.slots),
        total_slots=compiled.slot_plan.total_slots,
        executors=[
            PlannedExecutors(slot_sharing_group=e.slot_sharing_group, count=e.count,
                             slots_per_executor=e.slots_per_executor, cpu=e.cpu, memory=e.memory)
            for e in compiled.slot_plan.executors
        ],
        num_execution_vertices=compiled.execution_graph.num_execution_vertices,
    )
    manifest = DataflowJob(metadata=ObjectMeta(name=name, namespace=namespace), spec=spec)
    job_plan: dict[str, Any] = plan_json(compiled, Layer.JOB)
    files = {
        JOB_FILE_KEY: dump_manifest(manifest),
        "plan.json": json.dumps({**job_plan, "physical": slot_plan_json(compiled.slot_plan)},
                                indent=1),
    }
    if spec.requirements:
        files[REQUIREMENTS_FILE] = "".join(f"{line}\n" for line in spec.requirements)
    return JobPlan(compiled, status, files)

