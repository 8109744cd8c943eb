"""A Kafka job whose SASL password is a Secret reference, on a real broker that requires it
(``hack/kafka``'s SASL_PLAINTEXT listener): it reads and writes exactly once, and the password is
in none of the files it leaves (its job file, status, log, checkpoints)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_spark_continuous import dataflow_run, write_job

from kafka_helpers import (
    clicks_job,
    expected_clicks,
    new_topic,
    produce_clicks,
    read_topic,
    sasl_listener,
    sasl_properties,
)

pytestmark = pytest.mark.spark

REF = {"secretKeyRef": {"name": "kafka-creds", "key": "password"}}


def _job(listener: dict[str, str], source: str, output: str, storage: Path) -> dict[str, Any]:
    properties = sasl_properties(listener, REF)
    sink = {"type": "kafka_sink", "args": {
        "bootstrapServers": listener["bootstrap"], "topic": output, "valueFormat": "json",
        "deliveryGuarantee": "exactly-once", "properties": properties,
        "transactionalIdPrefix": f"test-{uuid.uuid4().hex[:8]}"}}
    spec = clicks_job(listener["bootstrap"], source, sink, bounded=True,
                      checkpointing={"interval": "300ms", "storage": str(storage)})
    spec["pipeline"][0]["args"]["properties"] = properties
    return spec


def test_a_sasl_password_from_a_secret_reaches_kafka_and_no_file(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listener = sasl_listener(kafka_bootstrap)
    source, output = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap, partitions=2)
    base = int(time.time() * 1000) - 60_000
    produce_clicks(kafka_bootstrap, source, 0, 2000, base)
    secrets = tmp_path / "secrets"
    (secrets / "kafka-creds").mkdir(parents=True)
    (secrets / "kafka-creds" / "password").write_text(listener["password"])
    monkeypatch.setenv("DATAFLOW_SECRETS_DIR", str(secrets))
    storage, job, status = tmp_path / "checkpoints", tmp_path / "job.yaml", tmp_path / "s.json"
    write_job(job, _job(listener, source, output, storage))

    process = dataflow_run(job, status)
    _, stderr = process.communicate(timeout=300)
    log = stderr.decode()
    assert process.returncode == 0, log[-3000:]
    published = sorted(tuple(json.loads(value)) for _, value, _ in
                       read_topic(kafka_bootstrap, output))
    assert published == expected_clicks(2000, base)
    # The reference is what was kept; the password is nowhere but the secrets directory.
    written = [path for path in [job, status, *storage.rglob("*")] if path.is_file()]
    assert any(path.name == "_metadata" for path in written)
    password = listener["password"].encode()
    assert [str(p) for p in written if password in p.read_bytes()] == []
    assert password.decode() not in log
    assert all(p.stat().st_mode & 0o077 == 0 for p in written if p.name == "_metadata")


def test_a_missing_secret_fails_the_run_naming_it(
        kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listener = sasl_listener(kafka_bootstrap)
    monkeypatch.setenv("DATAFLOW_SECRETS_DIR", str(tmp_path / "no-secrets"))
    job = tmp_path / "job.yaml"
    write_job(job, _job(listener, new_topic(kafka_bootstrap), new_topic(kafka_bootstrap),
                        tmp_path / "checkpoints"))
    process = dataflow_run(job, tmp_path / "s.json")
    _, stderr = process.communicate(timeout=300)
    assert process.returncode != 0
    assert "key 'password' of Secret 'kafka-creds' cannot be read" in stderr.decode()
