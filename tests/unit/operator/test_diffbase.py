"""kopf's last-handled state as a digest: changes are seen, sizes are bounded."""

from __future__ import annotations

import kopf
import pytest

from dataflow_operator.diffbase import DIGEST_ANNOTATION, DigestDiffBaseStorage

pytestmark = pytest.mark.unit


def _body(spec: dict[str, object], annotations: dict[str, str] | None = None) -> kopf.Body:
    return kopf.Body({"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
                      "metadata": {"name": "j", "annotations": annotations or {}},
                      "spec": spec})


def test_unchanged_spec_reads_back_as_the_last_handled_state() -> None:
    storage = DigestDiffBaseStorage()
    big = {"pipeline": [{"name": "src", "args": {"elements": ["x" * 1000] * 250}}]}
    body = _body(big)
    assert storage.fetch(body=body) is None  # never handled: new
    patch = kopf.Patch()
    storage.store(body=body, patch=patch, essence=storage.build(body=body))
    stored = patch["metadata"]["annotations"][DIGEST_ANNOTATION]
    assert len(stored) == 64  # whatever the spec's size (here 250 KB)
    handled = _body(big, {DIGEST_ANNOTATION: stored})
    assert storage.fetch(body=handled) == storage.build(body=handled)


def test_a_changed_spec_differs_from_the_last_handled_state() -> None:
    storage = DigestDiffBaseStorage()
    body = _body({"parallelism": 1})
    patch = kopf.Patch()
    storage.store(body=body, patch=patch, essence=storage.build(body=body))
    changed = _body({"parallelism": 2},
                    {DIGEST_ANNOTATION: patch["metadata"]["annotations"][DIGEST_ANNOTATION]})
    before = storage.fetch(body=changed)
    assert before is not None and before["spec"] != storage.build(body=changed)["spec"]
