"""JobVertex ids derive from uids: stable across compiles, local to what changed."""

from __future__ import annotations

import pytest
from graph_specs import compiled, op, source

pytestmark = pytest.mark.unit


def _ids(**renames: str) -> dict[str, str]:
    pipeline = [source(), op("m", "map", "src", parallelism=2),
                op("k", "sum", {"from": "m", "keyBy": 0}, parallelism=2),
                op("out", "discard", "k", parallelism=2)]
    renamed = []
    for o in pipeline:
        o = dict(o)
        new = renames.get(o["name"])
        if new:
            o["name"] = new
        o["inputs"] = [renames.get(i, i) if isinstance(i, str)
                       else {**i, "from": renames.get(i["from"], i["from"])}
                       for i in o.get("inputs", [])]
        renamed.append(o)
    plan = compiled(*renamed)
    return {v.head.name: v.id for v in plan.job_graph.vertices}


def test_same_spec_same_ids() -> None:
    assert _ids() == _ids()
    assert all(len(i) == 32 for i in _ids().values())


def test_renaming_changes_only_that_vertex() -> None:
    before, after = _ids(), _ids(m="mapper")
    assert before["src"] == after["src"]
    assert before["k"] == after["k"]
    assert before["m"] != after["mapper"]


def test_uid_pins_the_id_through_a_rename() -> None:
    plain = compiled(source(), op("m", "map", "src", uid="stable", parallelism=2),
                     op("out", "discard", "m"))
    renamed = compiled(source(), op("m2", "map", "src", uid="stable", parallelism=2),
                       op("out", "discard", "m2"))
    assert plain.job_graph.vertices[1].id == renamed.job_graph.vertices[1].id
