"""kopf's record of the last handled spec, as a digest instead of a copy.

kopf remembers the last handled state of each object to tell a spec change from any other
event. Its default stores a copy of the whole spec in an annotation; annotations share a 256 KiB
limit, so a spec near that size made every write fail (HTTP 422) and the operator loop. The
handlers here only need to know *whether* the spec changed, never the old value: a digest of
the state, 64 characters whatever the spec's size, is enough.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, cast

import kopf

from dataflow_engine.spec.model import API_GROUP

DIGEST_ANNOTATION = f"{API_GROUP}/last-handled-digest"


def digest(essence: Any) -> str:
    return hashlib.sha256(json.dumps(essence, sort_keys=True,
                                     separators=(",", ":")).encode()).hexdigest()


class DigestDiffBaseStorage(kopf.DiffBaseStorage):
    """The last handled state: what kopf compares with, rebuilt from the current object when
    the digests agree, or a stand-in that differs in `spec` (a change) when they do not."""

    def build(self, *, body: kopf.Body,
              extra_fields: Iterable[kopf.FieldSpec] | None = None) -> kopf.BodyEssence:
        """kopf's essence, less this storage's own annotation (it would change the digest)."""
        essence: dict[str, Any] = dict(super().build(body=body, extra_fields=extra_fields))
        annotations = dict((essence.get("metadata") or {}).get("annotations") or {})
        if annotations.pop(DIGEST_ANNOTATION, None) is not None:
            metadata = {**essence["metadata"], "annotations": annotations}
            if not annotations:
                del metadata["annotations"]
            essence["metadata"] = metadata
            if not metadata:
                del essence["metadata"]
        return cast(kopf.BodyEssence, essence)

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        stored = body.metadata.annotations.get(DIGEST_ANNOTATION)
        if stored is None:
            return None  # never handled: a new object
        current = self.build(body=body)
        if digest(current) == stored:
            return current
        return cast(kopf.BodyEssence, {**dict(current), "spec": {"digest-of-before": stored}})

    def store(self, *, body: kopf.Body, patch: kopf.Patch,
              essence: kopf.BodyEssence) -> None:
        patch.metadata.annotations[DIGEST_ANNOTATION] = digest(essence)
