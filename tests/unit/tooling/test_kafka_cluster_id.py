"""hack/kafka's cluster ids: random, and never one kafka-storage would read as an option."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "hack"))

from localkafka import broker  # noqa: E402

pytestmark = pytest.mark.unit


def test_a_cluster_id_starting_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8's first six bits are 62: base64url's "-".
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x04" + bytes(15))])
    monkeypatch.setattr(broker.uuid, "uuid4", lambda: next(drawn))
    assert broker.random_cluster_id() == "BAAAAAAAAAAAAAAAAAAAAA"


def test_cluster_ids_are_22_base64url_characters_and_differ() -> None:
    ids = {broker.random_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(cluster_id) == 22 and not cluster_id.startswith("-") for cluster_id in ids)
