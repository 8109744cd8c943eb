"""Fixtures shared by every test tier."""

from __future__ import annotations

import subprocess
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
