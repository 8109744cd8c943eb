"""The Nexmark benchmark's generator and queries (benchmarks/nexmark.py): Nexmark's
proportions, and every query compiles to a DataflowJob."""

from __future__ import annotations

import collections
import sys

import pytest

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.manifest import load_manifest_text
from kube_helpers import REPO_ROOT

pytestmark = pytest.mark.unit

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import bench_nexmark  # noqa: E402
import nexmark  # noqa: E402


def test_events_keep_nexmarks_proportions_and_time() -> None:
    events = [nexmark.event(i) for i in range(5000)]
    kinds = collections.Counter(e[0] for e in events)
    assert kinds == {nexmark.PERSON: 100, nexmark.AUCTION: 300, nexmark.BID: 4600}
    assert [e[-1] for e in events] == list(range(5000))  # one event per millisecond
    people = {e[1] for e in events if e[0] == nexmark.PERSON}
    auctions = {e[1] for e in events if e[0] == nexmark.AUCTION}
    assert {e[2] for e in events if e[0] == nexmark.AUCTION} <= people  # known sellers
    bids = [e for e in events if e[0] == nexmark.BID]
    assert {b[1] for b in bids} <= auctions and {b[2] for b in bids} <= people
    assert nexmark.event(1234) == events[1234]  # the same event every time


@pytest.mark.parametrize("query", sorted(nexmark.QUERIES))
def test_each_query_is_a_dataflow_job(query: str) -> None:
    job = load_manifest_text(bench_nexmark.manifest(query, 1000))
    compiled = compile_job(job.spec, job.metadata.name)
    assert compiled.continuous  # unbounded events: it runs in epochs
