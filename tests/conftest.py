"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack_servers import hack_server
from kafka_helpers import KAFKA_ENV, kafka_broker

INSTALL_HELM = Path(__file__).resolve().parents[1] / "hack" / "install-helm"


@pytest.fixture(scope="session")
def helm() -> str:
    """The pinned helm binary (built from its Go module on first use); fails, never skips."""
    result = subprocess.run([str(INSTALL_HELM)], capture_output=True, text=True, timeout=1800,
                            stdin=subprocess.DEVNULL)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        pytest.fail(f"hack/install-helm failed (exit {result.returncode}):\n{result.stderr}",
                    pytrace=False)
    return lines[-1]


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a Kafka broker: ``$DATAFLOW_TEST_KAFKA_BOOTSTRAP`` when a user
    points the tests at one, else a broker of ``hack/kafka up`` for the session."""
    external = os.environ.get(KAFKA_ENV)
    if external:
        yield external
        return
    with kafka_broker() as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def hdfs_uri() -> Iterator[str]:
    """A Hadoop filesystem's root URI: ``$DATAFLOW_TEST_HDFS`` when a user points the tests at
    one, else an HDFS of ``hack/hdfs up`` for the session."""
    external = os.environ.get("DATAFLOW_TEST_HDFS")
    if external:
        yield external.rstrip("/")
        return
    with hack_server("hdfs") as uri:
        yield uri
