"""The namespaces the operator never runs jobs in: refused on the command line, and matched by no
handler when it watches every namespace."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_engine.cli import main
from dataflow_operator.handlers import build_registry

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease"])
def test_a_protected_namespace_is_refused_at_start(namespace: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["operator", "--namespace", "team-a", "--namespace", namespace]) == 2
    assert f"--namespace {namespace}: jobs never run in kube-system" in capsys.readouterr().err


def test_an_excluded_namespace_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["operator", "--namespace", "ops", "--exclude-namespace", "ops"]) == 2
    assert "--namespace ops" in capsys.readouterr().err


def test_jobs_of_excluded_namespaces_match_no_handler() -> None:
    registry = build_registry(controller=None, finalize_on_delete=False,  # type: ignore[arg-type]
                              excluded_namespaces=frozenset({"kube-system", "ops"}))
    handlers = [h for h in registry._changing.get_all_handlers()]  # type: ignore[attr-defined]
    assert handlers
    for handler in handlers:
        when: Any = handler.when
        assert when(namespace="kube-system") is False and when(namespace="ops") is False
        assert when(namespace="team-a") is True
