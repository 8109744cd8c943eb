"""The Kubernetes backend end to end: drivers and executors as real pods on a real node."""

from __future__ import annotations

import collections
import copy
import json
import random
import shlex
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from node_helpers import (
    EXECUTOR_LOSS_SEEN_SOONER,
    FUNCTIONS_MODULE,
    RealCluster,
    Volume,
    attempts,
    functions_config_map,
    manifest,
    pod_templates,
    pods,
    running_subtasks,
    subtask_states,
)

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.functions.library import count_above_one, split_words
from dataflow_engine.graph.deployment import SlotPlan
from dataflow_engine.runtime.streamoperators.sources import datagen_value
from dataflow_engine.spec.model import DataflowJobSpec
from kafka_helpers import (
    WINDOW_MS,
    ClickProducer,
    clicks_job,
    expected_clicks,
    new_topic,
    produce_watermark_pushers,
    read_topic,
)
from kube_helpers import REPO_ROOT, Kube, wait_until
from operator_helpers import (
    Operators,
    assert_drained_windows,
    events,
    published_windows,
    status,
    wait_condition,
    wait_job_status,
    window_count_pipeline,
)
from short_lived_jvms import SHORT_LIVED
from user_code import (
    EXPECTED,
    HELPERS_MODULE,
    HELPERS_SOURCE,
    user_code_pipeline,
    write_probe_wheel,
)

pytestmark = pytest.mark.node

WORDCOUNT = REPO_ROOT / "examples" / "wordcount-kubernetes.yaml"
#: Records of the slow job: 50 ms each, two subtasks: about 8 s of work per attempt.
SLOW_RECORDS = 300


def _slow_job(name: str, claim: str, functions: str, **spec: Any) -> dict[str, Any]:
    pipeline = [
        {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": SLOW_RECORDS}},
        {"name": "slowly", "type": "map", "inputs": ["numbers"],
         "function": f"{FUNCTIONS_MODULE}:slow"},
        {"name": "out", "type": "file", "inputs": ["slowly"],
         "args": {"path": f"/data/{name}", "format": "json"}},
    ]
    return manifest(name, pipeline, podTemplate=pod_templates(claim, functions), **spec)


def _numbers(text: str) -> list[int]:
    return sorted(json.loads(line) for line in text.splitlines() if line.strip())


def _wait_running(kube: Kube, namespace: str, name: str, subtasks: int = 2,
                  timeout: float = 120) -> dict[str, Any]:
    """The job's status once `subtasks` ExecutionVertices are RUNNING on executors."""
    found: dict[str, Any] = wait_until(
        f"{name} running {subtasks} subtasks",
        lambda: (s := status(kube, namespace, name)) and running_subtasks(s) >= subtasks and s,
        timeout, interval=0.25)
    return found


def _restricted_warnings(kube: Kube, namespace: str) -> str:
    """What Pod Security admission says of the namespace's current pods under `restricted`."""
    result = kube.kubectl("label", "namespace", namespace, "--overwrite", "--dry-run=server",
                          "pod-security.kubernetes.io/enforce=restricted")
    return result.stderr


def test_wordcount_runs_in_real_pods_and_writes_exact_counts_to_a_volume(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    kube, namespace = real_cluster.kube, restricted_namespace
    job = yaml.safe_load(WORDCOUNT.read_text())
    claim = job["spec"]["podTemplate"]["executor"]["spec"]["volumes"][0]["persistentVolumeClaim"]
    volume = Volume(real_cluster, namespace, claim["claimName"])
    try:
        real_operators.start()
        kube.apply(job, namespace=namespace)
        kube.kubectl("wait", "--for=condition=Succeeded", "--timeout=180s",
                     f"dataflowjob/{job['metadata']['name']}", "--namespace", namespace,
                     timeout=200)
        final = status(kube, namespace, "wordcount")
        assert final["jobStatus"] == "FINISHED"
        elements = job["spec"]["pipeline"][0]["args"]["elements"]
        counts = collections.Counter(word for line in elements for word, _ in split_words(line))
        words = sum(counts.values())
        by_name = {v["name"]: v for v in final["vertices"]}
        assert set(by_name) == {"Source: Collection Source", "Flat Map",
                                "Keyed Aggregation -> Filter -> Sink: File Sink"}
        for vertex in final["vertices"]:
            assert subtask_states(vertex) == ["FINISHED"] * vertex["parallelism"], vertex
        assert by_name["Source: Collection Source"]["recordsOut"] == len(elements)
        assert by_name["Flat Map"]["recordsIn"] == len(elements)
        assert by_name["Flat Map"]["recordsOut"] == words
        assert by_name["Keyed Aggregation -> Filter -> Sink: File Sink"]["recordsIn"] == words

        written = volume.read("wordcount/part-*")
        pairs = [tuple(json.loads(line)) for line in written.splitlines() if line.strip()]
        expected = sorted(p for p in counts.items() if count_above_one(p))
        assert sorted(pairs) == expected
        # The driver ran as a pod of the job's own account, on the real node.
        driver = kube.get("pod", "wordcount-driver", "--namespace", namespace)
        assert driver is not None
        assert driver["spec"]["serviceAccountName"] == "dataflow-driver-wordcount"
        assert driver["spec"]["nodeName"]
        assert driver["spec"]["containers"][0]["image"] == real_cluster.image
        # With the JVM options the tests' operators give (--jvm-options), for Spark's launcher.
        assert {"name": "SPARK_SUBMIT_OPTS", "value": SHORT_LIVED} in driver["spec"][
            "containers"][0]["env"]
    finally:
        volume.delete()


def _assert_every_row_once(volume: Volume, directory: str, seed: int, rows: int) -> None:
    """The datagen rows of ``seed`` written to the claim's ``directory``, each once."""
    written = volume.read(f"{directory}/part-*")
    published = sorted(tuple(json.loads(line)) for line in written.splitlines() if line)
    assert published == [(i, datagen_value(seed, i)) for i in range(rows)]


def _executors(kube: Kube, namespace: str, name: str, plan_hash: str
               ) -> dict[str, list[dict[str, Any]]]:
    """The running executor pods of the job's driver of a plan, by slot sharing group."""
    drivers = {pod["metadata"]["uid"] for pod in pods(
        kube, namespace, f"dataflow.io/role=driver,dataflow.io/job={name},"
                         f"dataflow.io/plan-hash={plan_hash}")}
    by_group: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for pod in pods(kube, namespace, f"dataflow.io/role=executor,dataflow.io/job={name}"):
        owners = {owner["uid"] for owner in pod["metadata"].get("ownerReferences", [])}
        if owners & drivers and pod["status"].get("phase") == "Running" and pod[
                "metadata"].get("deletionTimestamp") is None:
            group = pod["metadata"]["labels"].get("dataflow.io/slot-sharing-group", "")
            by_group[group].append(pod)
    return by_group


def _assert_executors_of_plan(kube: Kube, namespace: str, name: str, plan_hash: str,
                              plan: SlotPlan) -> None:
    """Each slot sharing group gets, as Spark's dynamic allocation asks for them while its
    tasks wait, the executors of its compiled count and shape; their JVMs, and the driver's,
    start from the image's class archive."""
    shapes = {e.slot_sharing_group: e for e in plan.executors}
    found = wait_until(f"the executors of plan {plan_hash}", lambda: (
        e := _executors(kube, namespace, name, plan_hash)) and {
        g: len(members) for g, members in e.items()} == {
        g: shape.count for g, shape in shapes.items()} and e, timeout=120)
    for group, members in found.items():
        for pod in members:
            resources = pod["spec"]["containers"][0]["resources"]
            assert resources["requests"] == {"cpu": shapes[group].cpu,
                                             "memory": shapes[group].memory}
            assert resources["limits"] == {"memory": shapes[group].memory}
            # The operator's --jvm-options, as Spark hands an executor its JVM's options.
            options = [e.get("value") for e in pod["spec"]["containers"][0].get("env", [])
                       if e["name"].startswith("SPARK_JAVA_OPT_")]
            assert SHORT_LIVED in options, options
            executor = pod["metadata"]["name"]
            wait_until(f"{executor}'s JVM mapping the class archive", lambda executor=executor:
                       _maps_class_archive(kube, namespace, executor), timeout=30)
    drivers = pods(kube, namespace, f"dataflow.io/role=driver,dataflow.io/job={name},"
                                    f"dataflow.io/plan-hash={plan_hash}")
    assert drivers and all(_maps_class_archive(kube, namespace, pod["metadata"]["name"])
                           for pod in drivers)


def _maps_class_archive(kube: Kube, namespace: str, pod: str) -> bool:
    """Whether a process of the pod maps the image's class archive (docker/class-archive.sh):
    a JVM that cannot use it unmaps it again."""
    found = kube.kubectl("exec", "--namespace", namespace, pod, "--", "sh", "-c",
                         "grep -l spark-classes.jsa /proc/[0-9]*/maps || true").stdout
    return bool(found.strip())


def test_an_autoscaler_rescale_gives_each_slot_sharing_group_the_executors_of_its_plan(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    """A streaming job of two slot sharing groups, one slot per executor, on real pods: the
    light group's source and the heavy group's keyed vertex, which costs 50 ms a record at
    18 records/s (90 % busy, beyond 0.7 +- 0.1). The autoscaler scales the keyed vertex (and
    only it) to 2 through a savepoint on a claim; each group's executors have its compiled
    count and shape before and after; suspended, every row up to its savepoint is written
    once."""
    kube, namespace = real_cluster.kube, restricted_namespace
    volume = Volume(real_cluster, namespace, "scaled")
    functions = functions_config_map(kube, namespace)
    groups = [{"name": "light", "cpu": "100m", "memory": "512Mi"},
              {"name": "heavy", "cpu": "150m", "memory": "512Mi"}]
    job = manifest("scaled", [
        {"name": "numbers", "type": "datagen", "slotSharingGroup": "light",
         "args": {"rowsPerSecond": 18, "seed": 4}},
        {"name": "slowly", "type": "map", "function": f"{FUNCTIONS_MODULE}:slow",
         "slotSharingGroup": "heavy",
         "inputs": [{"from": "numbers", "keyBy": f"{FUNCTIONS_MODULE}:index_modulo_four"}]},
        {"name": "out", "type": "file", "inputs": ["slowly"], "slotSharingGroup": "heavy",
         "args": {"path": "/data/scaled", "format": "json"}},
    ], parallelism=1, slotSharingGroups=groups, slotsPerExecutor=1, runtimeMode="STREAMING",
        epochInterval="500ms", checkpointing={"interval": "1s", "storage": "/data/checkpoints"},
        podTemplate=pod_templates("scaled", functions),
        job={"upgradeMode": "savepoint", "autoscaler": {
            "enabled": True, "metricsWindow": "10s", "stabilizationInterval": "5s",
            "utilizationBoundary": 0.1, "scaleDownDelay": "1h",
            "vertices": [{"operator": "slowly", "maxParallelism": 2}]}})
    spec = DataflowJobSpec.model_validate(job["spec"])
    compiled = compile_job(spec, "scaled")
    keyed = next(v.id for v in compiled.job_graph.vertices if v.name.startswith("Map"))
    rescaled = compile_job(spec.model_copy(update={"parallelism_overrides": {keyed: 2}}),
                           "scaled")
    assert {e.slot_sharing_group: e.count for e in rescaled.slot_plan.executors} == {
        "light": 1, "heavy": 2}
    try:
        real_operators.start()
        kube.apply(job, namespace=namespace)
        first = _wait_running(kube, namespace, "scaled", subtasks=2, timeout=240)
        _assert_executors_of_plan(kube, namespace, "scaled", first["plan"]["hash"],
                                  compiled.slot_plan)
        try:
            scaled = wait_until("the rescaled deployment running", lambda: (
                s := status(kube, namespace, "scaled")) and s["deployment"]["id"] != first[
                "deployment"]["id"] and running_subtasks(s) == 3 and s, timeout=240)
        except BaseException:  # what the autoscaler and the job said instead
            now = status(kube, namespace, "scaled")
            print(json.dumps({key: now.get(key) for key in (
                "jobStatus", "deployment", "vertices", "autoscaler", "conditions")}, indent=1))
            raise
        _assert_executors_of_plan(kube, namespace, "scaled", scaled["plan"]["hash"],
                                  rescaled.slot_plan)
        [decision] = scaled["autoscaler"]["decisions"]
        assert [(c["vertex"], c["parallelism"], c["newParallelism"])
                for c in decision["applied"]] == [(keyed, 1, 2)], decision
        assert scaled["deployment"]["restoreFrom"].startswith("/data/checkpoints/savepoints/")
        assert scaled["deployedGeneration"] == 1
        assert events(kube, namespace, "scaled", "ScalingApplied")
        # Suspended with a savepoint: the rows up to it are in the files, each once.
        kube.kubectl("patch", "dfj", "scaled", "--namespace", namespace, "--type=merge",
                     "-p", '{"spec": {"suspend": true}}')
        wait_job_status(kube, namespace, "scaled", "SUSPENDED", timeout=120)
        rows = sum(1 for line in volume.read("scaled/part-*").splitlines() if line.strip())
        assert rows > 18 * 10, rows  # more than the first deployment's first seconds
        _assert_every_row_once(volume, "scaled", seed=4, rows=rows)
    finally:
        kube.kubectl("delete", "dfj", "scaled", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        volume.delete()


def test_a_deleted_executor_is_replaced_and_the_output_stays_exact(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    kube, namespace = real_cluster.kube, restricted_namespace
    functions = functions_config_map(kube, namespace)
    volume = Volume(real_cluster, namespace, "output")
    try:
        real_operators.start()
        kube.apply(_slow_job("lose-executor", "output", functions,
                             sparkConf=EXECUTOR_LOSS_SEEN_SOONER), namespace=namespace)
        _wait_running(kube, namespace, "lose-executor")
        executors = pods(kube, namespace, "dataflow.io/role=executor")
        assert executors, "no executor pod while subtasks run"
        # Everything running now was admitted under `restricted`, and still would be.
        assert "violate" not in _restricted_warnings(kube, namespace)
        victim = executors[0]["metadata"]["name"]
        kube.kubectl("delete", "pod", victim, "--namespace", namespace, "--grace-period=0",
                     "--force")
        wait_condition(kube, namespace, "lose-executor", "Succeeded", timeout=240)
        final = status(kube, namespace, "lose-executor")
        assert final["restarts"] == 0  # Spark replaced the executor; the driver kept going
        retried = [a for v in final["vertices"] for a in attempts(v)]
        assert max(retried) >= 1, final["vertices"]
        for vertex in final["vertices"]:
            assert subtask_states(vertex) == ["FINISHED"] * vertex["parallelism"]
        assert _numbers(volume.read("lose-executor/part-*")) == list(range(1, SLOW_RECORDS + 1))
        names = {p["metadata"]["name"] for p in pods(kube, namespace, "dataflow.io/role=executor")}
        assert victim not in names
    finally:
        volume.delete()


def test_a_deleted_driver_restarts_per_strategy_then_finishes_exactly(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    kube, namespace = real_cluster.kube, restricted_namespace
    functions = functions_config_map(kube, namespace)
    volume = Volume(real_cluster, namespace, "output")
    try:
        real_operators.start()
        # Two jobs at once (the node runs both): one whose strategy allows a restart, one with
        # no attempts left. Each loses its driver as soon as its subtasks run.
        allowed = {"lose-driver": 1, "no-retries": 0}
        for name, count in allowed.items():
            kube.apply(_slow_job(name, "output", functions, restartStrategy={
                "type": "fixed-delay", "attempts": count, "delay": "1s"}), namespace=namespace)
        waiting = set(allowed)
        while waiting:
            started = wait_until("a job running its subtasks", lambda: [
                name for name in sorted(waiting)
                if running_subtasks(status(kube, namespace, name)) >= 2], timeout=180)
            for name in started:
                kube.kubectl("delete", "pod", f"{name}-driver", "--namespace", namespace,
                             "--grace-period=0", "--force")
                waiting.discard(name)
        wait_until("restarts counted",
                   lambda: status(kube, namespace, "lose-driver").get("restarts") == 1,
                   timeout=60)
        wait_condition(kube, namespace, "lose-driver", "Succeeded", timeout=240)
        assert events(kube, namespace, "lose-driver", "Restarting")
        final = status(kube, namespace, "lose-driver")
        assert final["jobStatus"] == "FINISHED" and final["restarts"] == 1
        # The restarted run is attempt 1 of every subtask (Flink counts attempts per restart).
        assert {a for v in final["vertices"] for a in attempts(v)} == {1}
        assert _numbers(volume.read("lose-driver/part-*")) == list(range(1, SLOW_RECORDS + 1))

        # With no attempts left, losing the driver fails the job, with the reason.
        failed = wait_condition(kube, namespace, "no-retries", "Failed", timeout=120)
        assert failed["message"], failed
        wait_job_status(kube, namespace, "no-retries", "FAILED", timeout=30)
        assert events(kube, namespace, "no-retries", "Failed")
    finally:
        volume.delete()


def test_the_driver_log_and_spark_ui_are_reachable_as_the_status_says(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    kube, namespace = real_cluster.kube, restricted_namespace
    functions = functions_config_map(kube, namespace)
    volume = Volume(real_cluster, namespace, "output")
    try:
        real_operators.start()
        kube.apply(_slow_job("observed", "output", functions), namespace=namespace)
        driver = _wait_running(kube, namespace, "observed")["driver"]
        forward = shlex.split(driver["sparkUiForward"])
        assert forward[:2] == ["kubectl", "port-forward"] and forward[-1] == "4040:4040"
        with subprocess.Popen(
                ["kubectl", f"--kubeconfig={kube.kubeconfig}", *forward[1:]],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as tunnel:
            try:
                page = wait_until("the Spark UI through the port-forward",
                                  lambda: _get("http://localhost:4040/jobs/"), timeout=30)
                assert "Spark Jobs" in page and "observed" in page
            finally:
                tunnel.terminate()
        wait_condition(kube, namespace, "observed", "Succeeded", timeout=180)
        logs = shlex.split(driver["logs"])
        assert logs[:2] == ["kubectl", "logs"]
        # The runner's final table, as `dataflow run` prints it, is the driver log's end.
        assert "Source: Sequence Source" in kube.kubectl(*logs[1:]).stdout
    finally:
        volume.delete()


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return str(answer.read().decode(errors="replace"))
    except OSError:
        return None


def test_user_code_without_an_image_in_real_pods(
        real_cluster: RealCluster, restricted_namespace: str, real_operators: Operators,
        tmp_path: Path) -> None:
    """spec.pyFiles from a ConfigMap and spec.requirements (a wheel, on a ConfigMap volume:
    pods reach no package index here), the environment cached on the job's volume: the driver
    and the executors' Python workers import both."""
    kube, namespace = real_cluster.kube, restricted_namespace
    wheel = write_probe_wheel(tmp_path)
    kube.kubectl("create", "configmap", "code", "--namespace", namespace,
                 f"--from-literal={HELPERS_MODULE}.py={HELPERS_SOURCE}")
    kube.kubectl("create", "configmap", "wheels", "--namespace", namespace,
                 f"--from-file={wheel}")
    templates = pod_templates("output")
    for template in templates.values():
        template["spec"]["containers"][0]["volumeMounts"].append(
            {"name": "wheels", "mountPath": "/opt/wheels", "readOnly": True})
        template["spec"]["volumes"].append({"name": "wheels", "configMap": {"name": "wheels"}})
    volume = Volume(real_cluster, namespace, "output")

    def shipped(name: str) -> dict[str, Any]:
        pipeline = user_code_pipeline()
        pipeline[-1] = {"name": "out", "type": "file", "inputs": ["shouted"],
                        "args": {"path": f"/data/{name}", "format": "json"}}
        return manifest(name, pipeline, podTemplate=templates,
                        pyFiles=[{"configMap": "code"}],
                        requirements=[f"/opt/wheels/{wheel.name}"],
                        requirementsCacheDir="/data/venvs")

    try:
        real_operators.start()
        for name in ("shipped", "again"):
            kube.apply(shipped(name), namespace=namespace)
            wait_condition(kube, namespace, name, "Succeeded", timeout=240)
            written = sorted(json.loads(line) for line in volume.read(f"{name}/part-*")
                             .splitlines() if line.strip())
            assert written == EXPECTED
        # The second run found the environment the first one built on the volume.
        first = kube.kubectl("logs", "--namespace", namespace, "shipped-driver").stdout
        second = kube.kubectl("logs", "--namespace", namespace, "again-driver").stdout
        assert "Successfully installed dataflow-probe-1.0" in first
        assert "Successfully installed" not in second
    finally:
        volume.delete()


def _last_checkpoint(kube: Kube, namespace: str, name: str) -> int:
    checkpoints = status(kube, namespace, name).get("checkpoints") or {}
    return int((checkpoints.get("lastCompleted") or {}).get("id", 0))


def _running_executor(kube: Kube, namespace: str) -> str | None:
    running = [p for p in pods(kube, namespace, "dataflow.io/role=executor")
               if p["status"].get("phase") == "Running"]
    return running[0]["metadata"]["name"] if running else None


def _delete_pods_between_checkpoints(kube: Kube, namespace: str, name: str,
                                     victims: tuple[str, ...], seed: int,
                                     max_delay: float) -> None:
    """Deletes each victim ("driver", or a running executor) at a random moment after a
    checkpoint newer than the last loss, so every loss has state to resume from. A driver's
    loss is one more restart of the job; an executor's is Spark's to replace, not a restart."""
    delays = random.Random(seed)
    seen, restarts = 0, status(kube, namespace, name).get("restarts", 0)

    def checkpointed_since(last: int) -> bool:
        now = status(kube, namespace, name)
        assert now.get("jobStatus") != "FINISHED", (
            f"{name} finished before its {len(victims)} losses: give it more to do")
        return int(((now.get("checkpoints") or {}).get("lastCompleted") or {}).get("id", 0)) > last

    for victim in victims:
        wait_until("a checkpoint since the last loss", lambda last=seen: checkpointed_since(last),
                   timeout=240)
        time.sleep(delays.uniform(0.0, max_delay))
        now = status(kube, namespace, name)
        assert now.get("restarts", 0) == restarts, (  # a restart nobody caused: say why
            f"an unplanned restart: events {events(kube, namespace, name)}, "
            f"conditions {now.get('conditions')}, driver {now.get('driver')}")
        pod = f"{name}-driver" if victim == "driver" else wait_until(
            "a running executor", lambda: _running_executor(kube, namespace))
        kube.kubectl("delete", "pod", pod, "--namespace", namespace, "--grace-period=0",
                     "--force")
        seen = _last_checkpoint(kube, namespace, name)
        if victim == "driver":
            restarts += 1
            wait_until("the restart counted", lambda n=restarts: status(
                kube, namespace, name).get("restarts") == n, timeout=60)


def test_a_continuous_job_in_real_pods_publishes_every_row_once_while_pods_are_deleted(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    """Epochs on real executors, checkpoints on a claim, and two pods deleted at random
    moments: an executor pod is replaced while the driver goes on checkpointing; the driver pod
    is restarted within its deployment and resumes from its newest checkpoint. The file sink
    holds every generated row once. (The Kafka test below loses its driver first.)"""
    kube, namespace = real_cluster.kube, restricted_namespace
    volume = Volume(real_cluster, namespace, "stream")
    # 50 s at 300 rows/s: time for the two losses. Rows are generated only while a driver runs
    # (counted from its start), and the losses take about 18 s of that on an idle machine
    # (twice as long on a loaded one); the test fails at once, saying so, if the job ends first.
    rows = 15_000
    try:
        real_operators.start()
        job = manifest("stream", [
            {"name": "events", "type": "datagen",
             "args": {"rowsPerSecond": 300, "numberOfRows": rows, "seed": 3}},
            {"name": "out", "type": "file", "inputs": ["events"],
             "args": {"path": "/data/stream", "format": "json"}}],
            runtimeMode="STREAMING", epochInterval="500ms",
            checkpointing={"interval": "1s", "storage": "/data/checkpoints"},
            restartStrategy={"type": "fixed-delay", "attempts": 5, "delay": "1s"},
            podTemplate=pod_templates("stream"), sparkConf=EXECUTOR_LOSS_SEEN_SOONER)
        kube.apply(job, namespace=namespace)
        deployment = wait_until("the deployment", lambda: status(
            kube, namespace, "stream").get("deployment"), timeout=240)
        _delete_pods_between_checkpoints(
            kube, namespace, "stream", ("executor", "driver"), seed=5, max_delay=2.0)
        wait_condition(kube, namespace, "stream", "Succeeded", timeout=600)
        final = status(kube, namespace, "stream")
        assert final["restarts"] == 1
        assert final["checkpoints"]["restoredFrom"].startswith("/data/checkpoints/chk-")
        assert final["deployment"]["id"] == deployment["id"]
        _assert_every_row_once(volume, "stream", seed=3, rows=rows)
    finally:
        kube.kubectl("delete", "dfj", "stream", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        volume.delete()


def test_exactly_once_from_kafka_to_kafka_in_real_pods_while_pods_are_deleted(
        real_cluster: RealCluster, restricted_namespace: str, real_operators: Operators,
        node_kafka_bootstrap: str) -> None:
    """Clicks keep arriving while the driver pod and then an executor pod are deleted at
    random moments; once every partition's watermark has passed the clicks,
    a read_committed consumer of the output topic sees every click's window exactly once,
    and still does after more checkpoints."""
    kube, namespace, bootstrap = real_cluster.kube, restricted_namespace, node_kafka_bootstrap
    source, output = new_topic(bootstrap), new_topic(bootstrap, partitions=2)
    base = int(time.time() * 1000) - 600_000
    functions = functions_config_map(kube, namespace)
    volume = Volume(real_cluster, namespace, "checkpoints")
    sink = {"type": "kafka_sink", "args": {
        "bootstrapServers": bootstrap, "topic": output, "valueFormat": "json",
        "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": namespace}}
    spec = clicks_job(bootstrap, source, sink, bounded=False, functions=FUNCTIONS_MODULE,
                      checkpointing={"interval": "1s", "storage": "/data/checkpoints"})
    spec.pop("parallelism")
    job = manifest("clicks", spec.pop("pipeline"), **spec,
                   restartStrategy={"type": "fixed-delay", "attempts": 5, "delay": "1s"},
                   podTemplate=pod_templates("checkpoints", functions),
                   sparkConf=EXECUTOR_LOSS_SEEN_SOONER)

    try:
        real_operators.start()
        kube.apply(job, namespace=namespace)
        with ClickProducer(bootstrap, source, base, 100, 40_000) as clicks:
            _delete_pods_between_checkpoints(
                kube, namespace, "clicks", ("driver", "executor"), seed=11,
                max_delay=3.0)
        produce_watermark_pushers(bootstrap, source, base + clicks.produced + 7 * WINDOW_MS)
        expected = expected_clicks(clicks.produced, base)

        def published() -> list[tuple[Any, ...]]:
            return sorted(tuple(json.loads(value)) for _, value, _ in
                          read_topic(bootstrap, output))

        wait_until("every window published", lambda: len(published()) >= len(expected),
                   timeout=300)
        assert published() == expected
        after = _last_checkpoint(kube, namespace, "clicks")
        wait_until("two more checkpoints",
                   lambda: _last_checkpoint(kube, namespace, "clicks") >= after + 2, timeout=120)
        assert published() == expected  # nothing published again
        final = status(kube, namespace, "clicks")
        assert final["restarts"] == 1
        assert final["checkpoints"]["restoredFrom"].startswith("/data/checkpoints/chk-")
    finally:
        kube.kubectl("delete", "dfj", "clicks", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        volume.delete()


def test_snapshots_rollback_and_a_drained_suspend_of_a_job_in_real_pods(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    """A windowed job on real pods, its state on a claim. A user's DataflowSnapshot completes
    with a path on the claim; periodic savepoints beyond historyMaxCount are deleted and their
    directories disposed of by the driver (POST /savepoints/dispose through the API server's
    service proxy). An upgrade whose driver cannot import a function rolls back to the last
    stable spec from the upgrade's savepoint; a suspend that drains fires the window open at
    the stop. Through all of it, every window is in the files once."""
    kube, namespace = real_cluster.kube, restricted_namespace
    volume = Volume(real_cluster, namespace, "state")
    pipeline = window_count_pipeline("/data/windows")
    spec: dict[str, Any] = {
        "parallelism": 1, "runtimeMode": "STREAMING", "epochInterval": "500ms",
        "checkpointing": {"interval": "1s", "storage": "/data/checkpoints"},
        "restartStrategy": {"type": "none"}, "podTemplate": pod_templates("state"),
        "job": {"upgradeMode": "savepoint", "drainOnSuspend": True,
                "upgrade": {"rollbackTimeout": "3m"},
                "savepoint": {"interval": "3s", "historyMaxCount": 1}}}
    try:
        real_operators.start()
        kube.apply(manifest("stream", pipeline, **spec), namespace=namespace)
        wait_condition(kube, namespace, "stream", "Running", timeout=240)

        kube.apply({"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowSnapshot",
                    "metadata": {"name": "mine"},
                    "spec": {"jobReference": {"name": "stream"}, "savepoint": {}}},
                   namespace=namespace)
        kube.kubectl("wait", "--for=condition=Completed", "--timeout=120s",
                     f"--namespace={namespace}", "dfsnap/mine", timeout=130)
        mine = (kube.get("dfsnap", "mine", "--namespace", namespace) or {})["status"]
        assert mine["path"].startswith("/data/checkpoints/savepoints/savepoint-"), mine

        wait_until("a periodic savepoint disposed of through the driver", lambda: events(
            kube, namespace, "stream", "SavepointDisposed"), timeout=120)
        listed = {s.get("status", {}).get("path") for s in (kube.get(
            "dfsnap", "--namespace", namespace) or {}).get("items", [])}
        on_claim = {f"/data/checkpoints/savepoints/{name}"
                    for name in volume.list("checkpoints/savepoints")}
        assert mine["path"] in on_claim
        # A deletion may be under way; nothing older than the retention's last look stays.
        assert len(on_claim - listed) <= 1, (on_claim, listed)

        # The upgrade: its savepoint taken, its driver pod fails to import a function.
        wait_until("the stable spec recorded", lambda: status(
            kube, namespace, "stream").get("lastStableGeneration"), timeout=60)
        broken = copy.deepcopy(pipeline)
        broken.insert(3, {"name": "broken", "type": "map", "function": "no_such_module:shout",
                          "inputs": ["ones"]})
        broken[4]["inputs"] = ["broken"]
        upgraded_at = time.monotonic()
        kube.apply(manifest("stream", broken, **spec), namespace=namespace)
        rolled = wait_condition(kube, namespace, "stream", "RolledBack", timeout=240)
        took = time.monotonic() - upgraded_at
        assert "no_such_module" in rolled["message"], rolled
        now = status(kube, namespace, "stream")
        assert now["deployedGeneration"] == 1 and now["observedGeneration"] == 2
        restore = now["deployment"]["restoreFrom"]
        assert restore.startswith("/data/checkpoints/savepoints/savepoint-"), restore
        wait_until("the stable spec restored from the upgrade's savepoint", lambda: (
            status(kube, namespace, "stream").get("checkpoints") or {}).get(
            "restoredFrom") == restore, timeout=240)
        restored = _last_checkpoint(kube, namespace, "stream")
        wait_until("a checkpoint after the rollback", lambda: _last_checkpoint(
            kube, namespace, "stream") > restored, timeout=180)

        kube.kubectl("patch", "dfj", "stream", "--namespace", namespace, "--type=merge",
                     "-p", '{"spec": {"suspend": true}}')
        suspended = wait_job_status(kube, namespace, "stream", "SUSPENDED", timeout=120)
        assert suspended["savepoints"]["last"]["triggerType"] == "suspend"
        assert_drained_windows(published_windows(volume.read("windows/part-*")))
        print(f"\nrolled back on real pods {took:.1f} s after the failed upgrade was applied")
    finally:
        kube.kubectl("delete", "dfsnap", "--all", "--namespace", namespace, "--timeout=60s",
                     timeout=90, check=False)
        kube.kubectl("delete", "dfj", "stream", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        volume.delete()
