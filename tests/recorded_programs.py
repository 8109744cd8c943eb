"""PyFlink programs as the tests run them: with their imports changed, and compared with what
real PyFlink printed for them (``hack/record-pyflink-examples``)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

RECORDINGS = Path(__file__).parent / "spark" / "pyflink_recordings" / "2.3.0"
PROBES = Path(__file__).parent / "spark" / "pyflink_probes"
#: The print sink's ``N> `` prefix: the subtask (from 1) that printed the line.
PREFIX = re.compile(r"^(\d+)> ")


def rewritten(program: Path, directory: Path) -> Path:
    """The program, in ``directory``, with ``pyflink`` replaced by ``dataflow_engine.api`` in
    its imports: the one change a PyFlink program needs."""
    source = program.read_text()
    assert "import pyflink" in source or "from pyflink" in source
    copy = directory / program.name
    copy.write_text(re.sub(r"\bpyflink\b(?=[. ])", "dataflow_engine.api", source))
    return copy


def by_subtask(lines: list[str], ordered: bool = True) -> dict[str, list[str]]:
    """Each subtask's lines (by their ``N> ``; unprefixed lines under ""): lines of different
    subtasks interleave as the subtasks happen to run, in PyFlink as here."""
    groups: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        match = PREFIX.match(line)
        groups[match.group(1) if match else ""].append(PREFIX.sub("", line))
    return {number: group if ordered else sorted(group) for number, group in groups.items()}
