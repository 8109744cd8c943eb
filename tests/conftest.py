"""Fixtures shared by every test tier."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

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


HACK_KAFKA = Path(__file__).resolve().parents[1] / "hack" / "kafka"


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a Kafka broker: ``$DATAFLOW_TEST_KAFKA_BOOTSTRAP`` when a user
    points the tests at one, else a broker of ``hack/kafka up`` for the session (stopped after
    it). Fails, never skips, when the broker cannot start."""
    external = os.environ.get("DATAFLOW_TEST_KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    started = subprocess.run([str(HACK_KAFKA), "up"], capture_output=True, text=True,
                             timeout=600, stdin=subprocess.DEVNULL)
    lines = started.stdout.strip().splitlines()
    if started.returncode != 0 or not lines:
        pytest.fail(f"hack/kafka up failed (exit {started.returncode}):\n{started.stderr}",
                    pytrace=False)
    try:
        yield lines[-1]
    finally:
        subprocess.run([str(HACK_KAFKA), "down", lines[-1]], capture_output=True, timeout=120,
                       check=False)
