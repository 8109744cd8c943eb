"""The trust boundary with pods that really run, under the chart's admission policies (the
`real_cluster` fixture applies them): code of the job's author in the driver holds the driver's
token and still creates nothing but the job's executors; a Kafka password from a Secret reaches
the brokers and none of the job's ConfigMaps, status, logs or checkpoints."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from node_helpers import (
    FUNCTIONS_MODULE,
    RealCluster,
    Volume,
    functions_config_map,
    manifest,
    pod_templates,
)

from kafka_helpers import (
    clicks_job,
    expected_clicks,
    new_topic,
    produce_clicks,
    read_topic,
    sasl_listener,
    sasl_properties,
)
from operator_helpers import Operators, wait_condition

pytestmark = pytest.mark.node

#: Runs in every Python process of the driver container (it is on its PYTHONPATH): the job
#: author's code, holding the driver's token, tries what the token must not do.
ATTACK_SOURCE = '''
import json, os, ssl, urllib.error, urllib.request

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _attempt(what, path, body, token, context):
    request = urllib.request.Request(
        "https://kubernetes.default.svc" + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            print("ATTACK", what, answer.status, flush=True)
    except urllib.error.HTTPError as error:
        message = json.loads(error.read() or b"{}").get("message", "")
        print("ATTACK", what, error.code, message.replace("\\n", " ")[:400], flush=True)


def _attack():
    if os.environ.get("ATTACKED") or not os.path.exists(ACCOUNT + "/token"):
        return
    os.environ["ATTACKED"] = "1"
    token = open(ACCOUNT + "/token").read()
    namespace = open(ACCOUNT + "/namespace").read()
    job = os.environ["DATAFLOW_JOB"]
    context = ssl.create_default_context(cafile=ACCOUNT + "/ca.crt")
    pods = "/api/v1/namespaces/" + namespace + "/pods"
    driver = urllib.request.Request("https://kubernetes.default.svc" + pods + "/" + job +
                                    "-driver", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(driver, context=context, timeout=10) as answer:
        uid = json.loads(answer.read())["metadata"]["uid"]
    # Shaped as the job's executors are (labels, owner), but for what they may not have.
    labels = {"dataflow.io/job": job, "dataflow.io/role": "executor"}
    owner = [{"apiVersion": "v1", "kind": "Pod", "name": job + "-driver", "uid": uid,
              "controller": True}]
    # Pods the restricted Pod Security Standard admits: what stops them is the policy.
    container = {"name": "c", "image": os.environ.get("ATTACK_IMAGE", "busybox"),
                 "command": ["sleep", "3600"], "securityContext": {
                     "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
    restricted = {"runAsNonRoot": True, "runAsUser": 185,
                  "seccompProfile": {"type": "RuntimeDefault"}}
    _attempt("other-account", pods, {
        "metadata": {"name": job + "-steal-account", "labels": labels,
                     "ownerReferences": owner},
        "spec": {"serviceAccountName": "default", "securityContext": restricted,
                 "containers": [container]}}, token, context)
    _attempt("secret-volume", pods, {
        "metadata": {"name": job + "-steal-secret", "labels": labels,
                     "ownerReferences": owner},
        "spec": {"serviceAccountName": "dataflow-executor-" + job,
                 "automountServiceAccountToken": False, "securityContext": restricted,
                 "containers": [container],
                 "volumes": [{"name": "s", "secret": {"secretName": "crown-jewels"}}]}},
        token, context)
    _attempt("configmap", "/api/v1/namespaces/" + namespace + "/configmaps",
             {"metadata": {"name": job + "-steal"}, "data": {}}, token, context)


_attack()
'''


def test_the_drivers_token_in_user_code_creates_nothing_but_executors(
        real_cluster: RealCluster, restricted_namespace: str,
        real_operators: Operators) -> None:
    kube, namespace = real_cluster.kube, restricted_namespace
    kube.kubectl("create", "secret", "generic", "crown-jewels", "--from-literal=key=jewel",
                 "--namespace", namespace)
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "attack"},
                "data": {"sitecustomize.py": ATTACK_SOURCE}}, namespace=namespace)
    templates = pod_templates()
    templates["driver"]["spec"]["containers"][0]["env"] = [
        {"name": "PYTHONPATH", "value": "/opt/attack"},
        {"name": "ATTACK_IMAGE", "value": real_cluster.image}]
    templates["driver"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "attack", "mountPath": "/opt/attack", "readOnly": True}]
    templates["driver"]["spec"]["volumes"] = [{"name": "attack",
                                               "configMap": {"name": "attack"}}]
    job = manifest("attack", [
        {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 100}},
        {"name": "squares", "type": "map", "function": "square", "inputs": ["numbers"]},
        {"name": "out", "type": "discard", "inputs": ["squares"]}], podTemplate=templates)
    real_operators.start()
    kube.apply(job, namespace=namespace)
    # The job runs: its executors, made by the real Spark driver, are admitted.
    wait_condition(kube, namespace, "attack", "Succeeded", timeout=240)
    log = kube.kubectl("logs", "attack-driver", "--namespace", namespace).stdout
    attempts = {line.split()[1]: line for line in log.splitlines() if line.startswith("ATTACK")}
    assert set(attempts) == {"other-account", "secret-volume", "configmap"}, log[-3000:]
    for what in ("other-account", "secret-volume"):
        code, message = attempts[what].split(maxsplit=3)[2:]
        assert code in ("403", "422") and "ValidatingAdmissionPolicy" in message, attempts[what]
    assert "executor pods run as dataflow-executor-attack" in attempts["other-account"]
    assert "may mount no Secret" in attempts["secret-volume"]
    assert attempts["configmap"].split()[2] == "403"  # RBAC: a driver has pods only
    print("\n" + "\n".join(attempts.values()))
    names = [p["metadata"]["name"] for p in (kube.get("pods", "--namespace", namespace)
                                              or {}).get("items", [])]
    assert not [n for n in names if "steal" in n], names
    assert kube.get("configmap", "attack-steal", "--namespace", namespace) is None


def test_a_sasl_password_from_a_secret_runs_and_is_found_nowhere(
        real_cluster: RealCluster, restricted_namespace: str, real_operators: Operators,
        node_kafka_bootstrap: str) -> None:
    kube, namespace, bootstrap = real_cluster.kube, restricted_namespace, node_kafka_bootstrap
    listener = sasl_listener(bootstrap)
    password = listener["password"]
    kube.kubectl("create", "secret", "generic", "kafka-creds",
                 f"--from-literal=password={password}", "--namespace", namespace)
    source, output = new_topic(bootstrap), new_topic(bootstrap, partitions=2)
    base = int(time.time() * 1000) - 60_000
    produce_clicks(bootstrap, source, 0, 3000, base)
    functions = functions_config_map(kube, namespace)
    properties = sasl_properties(listener, {"secretKeyRef": {"name": "kafka-creds",
                                                             "key": "password"}})
    sink = {"type": "kafka_sink", "args": {
        "bootstrapServers": listener["bootstrap"], "topic": output, "valueFormat": "json",
        "deliveryGuarantee": "exactly-once", "properties": properties,
        "transactionalIdPrefix": f"{namespace}-{uuid.uuid4().hex[:6]}"}}
    spec: dict[str, Any] = clicks_job(
        listener["bootstrap"], source, sink, bounded=True, functions=FUNCTIONS_MODULE,
        checkpointing={"interval": "1s", "storage": "/data/checkpoints"})
    spec["pipeline"][0]["args"]["properties"] = properties
    spec.pop("parallelism")
    job = manifest("sasl", spec.pop("pipeline"), **spec,
                   podTemplate=pod_templates("checkpoints", functions))
    volume = Volume(real_cluster, namespace, "checkpoints")
    try:
        real_operators.start()
        kube.apply(job, namespace=namespace)
        wait_condition(kube, namespace, "sasl", "Succeeded", timeout=300)
        published = sorted(tuple(json.loads(value)) for _, value, _ in
                           read_topic(bootstrap, output))
        assert published == expected_clicks(3000, base)
        # The password reached the brokers (through the driver's mount and the tasks) and no
        # object, log or file the job leaves behind.
        places = {
            "configmaps": kube.kubectl("get", "configmaps", "--namespace", namespace,
                                       "-o", "json").stdout,
            "the DataflowJob": kube.kubectl("get", "dataflowjob", "sasl", "--namespace",
                                            namespace, "-o", "json").stdout,
            "the driver's log": kube.kubectl("logs", "sasl-driver", "--namespace",
                                             namespace).stdout,
            "the operator's log": real_operators.logs(),
            "the driver pod": kube.kubectl("get", "pod", "sasl-driver", "--namespace",
                                           namespace, "-o", "json").stdout,
        }
        checkpoints = volume.read_bytes("checkpoints/*/_metadata")
        assert checkpoints and b"kafka-creds" in checkpoints  # the reference is kept
        assert password.encode() not in checkpoints
        assert [where for where, text in places.items() if password in text] == []
        assert "kafka-creds" in places["the driver pod"]  # mounted by reference
    finally:
        kube.kubectl("delete", "dfj", "sasl", "--namespace", namespace, "--timeout=60s",
                     "--ignore-not-found", timeout=90)
        volume.delete()
