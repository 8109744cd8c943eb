"""Servers of the project's hack/ tooling (hack/kafka, hack/hdfs) for the length of a block."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

HACK = Path(__file__).resolve().parents[1] / "hack"


@contextlib.contextmanager
def hack_server(tool: str, *options: str) -> Iterator[str]:
    """``hack/TOOL up OPTIONS``'s address (the last line it prints), taken down afterwards.
    Fails, never skips, when it cannot start."""
    started = subprocess.run([str(HACK / tool), "up", *options], capture_output=True,
                             text=True, timeout=600, stdin=subprocess.DEVNULL)
    lines = started.stdout.strip().splitlines()
    if started.returncode != 0 or not lines:
        pytest.fail(f"hack/{tool} up failed (exit {started.returncode}):\n{started.stderr}",
                    pytrace=False)
    try:
        yield lines[-1]
    finally:
        subprocess.run([str(HACK / tool), "down", lines[-1]], capture_output=True,
                       timeout=120, check=False)
