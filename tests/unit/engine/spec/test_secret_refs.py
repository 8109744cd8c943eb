"""Secret references: the spec and everything written from it carry the reference; the value is
read where it is used, from the secrets directory, and shipped with the tasks."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from dataflow_engine.errors import SpecError
from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.checkpoint.filesystems import LOCAL
from dataflow_engine.runtime.checkpoint.kafka_commit import committable_of
from dataflow_engine.runtime.secrets import SecretValues, read_secrets
from dataflow_engine.spec.catalog import KafkaSinkArgs
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_engine.spec.secret_refs import SecretKeySelector, SecretKeySource, job_secret_keys
from dataflow_operator.plan import build_plan
from dataflow_operator.resources.driver import (
    driver_pod,
    executor_pod_template,
    plan_config_map,
    spark_conf,
)
from dataflow_operator.resources.meta import JobRef

pytestmark = pytest.mark.unit

PASSWORD = {"secretKeyRef": {"name": "kafka-creds", "key": "password"}}
JOB = JobRef("stream", "team-a", "uid-1")


def _spec() -> DataflowJobSpec:
    return DataflowJobSpec.model_validate({
        "sparkConf": {"spark.hadoop.fs.s3a.secret.key": {"secretKeyRef": {
            "name": "s3", "key": "secret"}}, "spark.sql.shuffle.partitions": "2"},
        "pipeline": [
            {"name": "in", "type": "kafka", "args": {
                "bootstrapServers": "kafka:9092", "topics": ["in"], "properties": {
                    "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                    "sasl.username": "alice", "sasl.password": PASSWORD}}},
            {"name": "out", "type": "discard", "inputs": ["in"]}]})


def test_a_job_lists_every_key_it_references_once() -> None:
    assert job_secret_keys(_spec()) == [SecretKeySelector(name="kafka-creds", key="password"),
                                        SecretKeySelector(name="s3", key="secret")]


def test_values_are_read_from_the_secrets_directory_and_resolved(tmp_path: Path) -> None:
    (tmp_path / "kafka-creds").mkdir()
    (tmp_path / "kafka-creds" / "password").write_text("hunter2")
    values = read_secrets([SecretKeySelector(name="kafka-creds", key="password")],
                          str(tmp_path))
    assert values.resolve({"sasl.password": SecretKeySource.model_validate(PASSWORD),
                           "sasl.username": "alice"}) == {"sasl.password": "hunter2",
                                                          "sasl.username": "alice"}
    assert "hunter2" not in repr(values)
    shipped = pickle.loads(pickle.dumps(values))  # with the tasks
    assert shipped.value(SecretKeySelector(name="kafka-creds", key="password")) == "hunter2"
    with pytest.raises(SpecError, match="key 'nope' of Secret 'kafka-creds' cannot be read"):
        read_secrets([SecretKeySelector(name="kafka-creds", key="nope")], str(tmp_path))


def test_a_task_installs_the_values_it_was_given() -> None:
    ref = SecretKeySource.model_validate(PASSWORD)
    before = secrets.installed()
    try:
        secrets.install(SecretValues({("kafka-creds", "password"): "hunter2"}))
        assert secrets.resolve({"sasl.password": ref}) == {"sasl.password": "hunter2"}
        secrets.install(SecretValues())
        with pytest.raises(SpecError, match="was not given to this process"):
            secrets.resolve({"sasl.password": ref})
    finally:
        secrets.install(before)


def test_the_driver_pod_mounts_the_referenced_keys_and_nothing_shows_a_value() -> None:
    spec = _spec()
    plan = build_plan(JOB.name, JOB.namespace, spec)
    pod = driver_pod(JOB, spec, "img:1", plan.status.hash, 0)
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts = {m["name"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert volumes["dataflow-secret-0"]["secret"] == {
        "secretName": "kafka-creds", "optional": True, "defaultMode": 0o440,
        "items": [{"key": "password", "path": "password"}]}
    assert mounts["dataflow-secret-0"] == {"name": "dataflow-secret-0", "readOnly": True,
                                           "mountPath": "/etc/dataflow-secrets/kafka-creds"}
    assert volumes["dataflow-secret-1"]["secret"]["secretName"] == "s3"
    # Executors mount none: the values come with the tasks.
    executor = executor_pod_template(JOB, spec)
    assert "secret" not in yaml.safe_dump(executor)
    conf = spark_conf(JOB, spec, plan.compiled.slot_plan, "img:1")
    assert "spark.hadoop.fs.s3a.secret.key" not in conf  # read by the driver at its start
    config_map = plan_config_map(JOB, plan.files, conf, executor, plan.status.hash)
    text = yaml.safe_dump(config_map)
    assert "secretKeyRef" in text and "kafka-creds" in text  # the reference, in the job file


def test_a_checkpoint_keeps_the_reference_in_a_file_only_its_writer_reads(
        tmp_path: Path) -> None:
    args = KafkaSinkArgs.model_validate({
        "bootstrapServers": "kafka:9092", "topic": "out", "deliveryGuarantee": "exactly-once",
        "transactionalIdPrefix": "t", "properties": {"sasl.password": PASSWORD}})
    committable: Any = committable_of("sink", args)
    assert dict(committable.properties)["sasl.password"] == SecretKeySource.model_validate(
        PASSWORD)
    path = tmp_path / "chk-1" / "_metadata"
    LOCAL.write_atomically(str(path), pickle.dumps(committable))
    assert (os.stat(path).st_mode & 0o777, os.stat(path.parent).st_mode & 0o777) == (
        0o600, 0o700)
