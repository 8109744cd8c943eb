"""Rollback of an upgrade that does not come up healthy (spec.job.upgrade.rollbackTimeout),
through the controller's entry points on fakes: a failing upgrade goes back to the last stable
spec from the upgrade's savepoint, is not deployed again for the same generation, and the next
spec change is reconciled as usual; an upgrade that never runs is rolled back at its timeout."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from controller_harness import STREAM as BASE
from controller_harness import ControllerHarness, run_async

from dataflow_operator.resources.meta import JobRef

pytestmark = pytest.mark.unit

#: The harness's job, failing for good at once and rolled back after an hour.
STREAM: dict[str, Any] = {
    **BASE, "restartStrategy": {"type": "fixed-delay", "attempts": 0, "delay": "0s"},
    "job": {"upgradeMode": "savepoint", "upgrade": {"rollbackTimeout": "1h"}}}


def _rescaled(spec: dict[str, Any], parallelism: int) -> dict[str, Any]:
    changed = copy.deepcopy(spec)
    changed["pipeline"][1]["parallelism"] = parallelism
    return changed


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions", []) if c["type"] == type_), None)


async def _upgraded_with_no_time_to_run(h: ControllerHarness) -> tuple[JobRef, dict[str, Any]]:
    """A job rolled back at once (rollbackTimeout 0s) upgraded to generation 2; the spec."""
    spec = copy.deepcopy(STREAM)
    spec["job"]["upgrade"]["rollbackTimeout"] = "0s"
    job = await h.running(spec)
    h.kube.set_spec(job, _rescaled(spec, 3))
    await h.on_spec(job)
    return job, spec


@run_async
async def test_a_failing_upgrade_rolls_back_to_the_last_stable_spec_from_its_savepoint() -> None:
    h = ControllerHarness()
    job = await h.running(STREAM)
    stable = h.kube.status(job)
    assert stable["lastStableGeneration"] == 1
    assert json.loads(stable["lastStableSpec"])["pipeline"][1]["name"] == "sums"
    stable_plan = stable["plan"]["hash"]

    h.kube.set_spec(job, _rescaled(STREAM, 3))
    await h.on_spec(job)  # stop with a savepoint, deploy generation 2 from it
    upgraded = h.kube.status(job)
    savepoint = upgraded["deployment"]["restoreFrom"]
    assert upgraded["deployedGeneration"] == 2 and savepoint.startswith("/savepoints/job/")
    h.backend.driver(job).run()
    h.backend.driver(job).fail("driver exited with code 1: the new plan cannot start")
    await h.controller.monitor_cycle()  # FAILED (no restarts left), then rolled back

    after = h.kube.status(job)
    rolled = _condition(after, "RolledBack")
    assert rolled is not None and rolled["status"] == "True", after["conditions"]
    assert "generation 2 rolled back to generation 1" in rolled["message"]
    assert "the new plan cannot start" in rolled["message"]
    assert (after["deployedGeneration"], after["observedGeneration"]) == (1, 2)
    assert after["plan"]["hash"] == stable_plan and after["jobStatus"] == "CREATED"
    assert after["deployment"]["restoreFrom"] == savepoint
    [*_, last] = h.backend.provisions(job)
    assert (last.restore_from, last.generation) == (savepoint, 1)
    assert h.backend.driver(job).plan_hash == stable_plan
    assert "RolledBack" in [e["reason"] for e in h.kube.events]
    assert h.kube.spec(job) == _rescaled(STREAM, 3)  # the user's spec stays: GitOps drift

    # The rolled-back job runs and is observed as usual; kopf's resume of generation 2 (an
    # operator restart) deploys nothing again.
    h.backend.driver(job).run()
    await h.controller.monitor_cycle()
    assert h.kube.status(job)["jobStatus"] == "RUNNING"
    provisions = len(h.backend.provisions(job))
    h.restart_operator()
    await h.on_spec(job)
    assert len(h.backend.provisions(job)) == provisions
    assert h.kube.status(job)["deployedGeneration"] == 1

    # The next spec change is an upgrade as any other: from a savepoint of the running job.
    h.kube.set_spec(job, _rescaled(STREAM, 1))
    await h.on_spec(job)
    now = h.kube.status(job)
    assert now["deployedGeneration"] == 3 and _condition(now, "RolledBack") is None
    assert h.backend.requests(job)[-1]["stop"] is True


@run_async
async def test_an_upgrade_that_never_runs_is_rolled_back_at_its_timeout() -> None:
    h = ControllerHarness()
    job, _ = await _upgraded_with_no_time_to_run(h)
    assert h.kube.status(job)["deployedGeneration"] == 2  # its driver stays Pending
    await h.controller.monitor_cycle()
    rolled = _condition(h.kube.status(job), "RolledBack")
    assert rolled is not None and "not healthy within 0s (it is CREATED)" in rolled["message"]


@run_async
async def test_without_a_rollback_timeout_a_failed_upgrade_stays_failed() -> None:
    h = ControllerHarness()
    spec = copy.deepcopy(STREAM)
    del spec["job"]["upgrade"]
    job = await h.running(spec)
    h.kube.set_spec(job, _rescaled(spec, 3))
    await h.on_spec(job)
    h.backend.driver(job).run()
    h.backend.driver(job).fail()
    await h.controller.monitor_cycle()
    after = h.kube.status(job)
    assert after["jobStatus"] == "FAILED" and _condition(after, "RolledBack") is None


@run_async
async def test_reverting_the_spec_after_a_rollback_ends_it_without_a_redeploy() -> None:
    h = ControllerHarness()
    job = await h.running(STREAM)
    h.kube.set_spec(job, _rescaled(STREAM, 3))
    await h.on_spec(job)
    h.backend.driver(job).run()
    h.backend.driver(job).fail()
    await h.controller.monitor_cycle()
    assert _condition(h.kube.status(job), "RolledBack") is not None
    h.backend.driver(job).run()
    await h.controller.monitor_cycle()
    started = len(h.backend.started)

    h.kube.set_spec(job, copy.deepcopy(STREAM))  # git revert: the spec that runs
    await h.on_spec(job)
    now = h.kube.status(job)
    assert _condition(now, "RolledBack") is None
    assert (now["observedGeneration"], now["jobStatus"]) == (3, "RUNNING")
    assert len(h.backend.started) == started  # the running driver is kept
    await h.controller.monitor_cycle()  # no rollback of the reverted generation either
    assert _condition(h.kube.status(job), "RolledBack") is None


@run_async
async def test_the_rolled_back_deployment_is_not_rolled_back_while_it_starts() -> None:
    """The deployment a rollback started runs the stable spec: reverting the spec (nothing
    redeployed, the RolledBack condition gone) before it is healthy rolls nothing back."""
    h = ControllerHarness()
    job, spec = await _upgraded_with_no_time_to_run(h)
    h.backend.driver(job).fail()
    await h.controller.monitor_cycle()
    rolled_back = h.kube.status(job)
    assert _condition(rolled_back, "RolledBack") is not None
    assert rolled_back["lastStableDeployment"] == rolled_back["deployment"]["id"]
    started = len(h.backend.started)

    h.kube.set_spec(job, copy.deepcopy(spec))  # its driver not running yet
    await h.on_spec(job)
    await h.controller.monitor_cycle()
    now = h.kube.status(job)
    assert _condition(now, "RolledBack") is None and len(h.backend.started) == started
    assert now["deployment"]["id"] == rolled_back["deployment"]["id"]


@run_async
async def test_a_spec_change_that_redeploys_nothing_is_never_rolled_back() -> None:
    """A savepointTriggerNonce bump keeps the deployment: its restart is the restart
    strategy's business, not a rollback's."""
    h = ControllerHarness()
    spec = copy.deepcopy(STREAM)
    spec["restartStrategy"]["attempts"] = 3
    job = await h.running(spec)
    h.kube.set_spec(job, {**spec, "job": {**spec["job"], "savepointTriggerNonce": 1}})
    await h.on_spec(job)
    h.backend.driver(job).fail()
    await h.controller.monitor_cycle()
    now = h.kube.status(job)
    assert now["jobStatus"] == "RESTARTING" and _condition(now, "RolledBack") is None


@run_async
async def test_a_last_state_upgrade_that_checkpointed_is_not_rolled_back() -> None:
    h = ControllerHarness()
    spec = copy.deepcopy(STREAM)
    spec["job"]["upgradeMode"] = "last-state"
    job = await h.running(spec)
    h.backend.driver(job).fail()  # the driver dies unseen: no savepoint, the lineage goes on
    h.kube.set_spec(job, _rescaled(spec, 3))
    await h.on_spec(job)
    assert h.kube.status(job)["deployment"]["restoreFrom"] in ("none", "latest")
    h.backend.driver(job).run().subtask_state = "INITIALIZING"  # never all running...
    await h.controller.monitor_cycle()  # ...but it checkpoints the new plan's state
    h.backend.driver(job).fail()
    await h.controller.monitor_cycle()
    refused = _condition(h.kube.status(job), "RolledBack")
    assert refused is not None and refused["status"] == "False", h.kube.status(job)
    assert "checkpointed the new plan's state" in refused["message"]
