"""hack/image keeps one build in its cache: each is over a gigabyte, and every commit makes
a new one (a machine filled its disk with them, and the real node then evicted its pods)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack"))

from localcluster import image  # noqa: E402

pytestmark = pytest.mark.unit


def test_a_build_removes_older_builds_images_and_keeps_its_own_stages(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []

    def podman(*args: str, capture: bool = False) -> str:
        calls.append(args)
        if args[0] == "images":
            return ("docker.io/library/dataflow-operator:0.1.0-old1\n"
                    "docker.io/library/dataflow-operator:0.1.0-new\n"
                    "docker.io/library/dataflow-operator:0.1.0-old2\n")
        return ""

    monkeypatch.setattr(image, "podman", podman)
    image.forget_older_builds("dataflow-operator:0.1.0-new", "2026-11-26T20:19:00Z")
    listing, removal, prune = calls
    assert f"reference={image.IMAGE_NAME}" in listing  # only the project's images
    assert removal == ("rmi", "--force", "docker.io/library/dataflow-operator:0.1.0-old1",
                       "docker.io/library/dataflow-operator:0.1.0-old2")
    # Untagged images made before this build go; this build's stages are newer and stay.
    assert prune == ("image", "prune", "--force", "--filter", "until=2026-11-26T20:19:00Z")
