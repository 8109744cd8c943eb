"""The local print relay: spool lines reach stdout once, and closed spool files go away."""

from __future__ import annotations

import os

import pytest

from dataflow_engine.runtime.spark.print_relay import PrintRelay

pytestmark = pytest.mark.unit


def test_lines_are_relayed_once_and_a_closed_spool_file_is_forgotten(
        capsys: pytest.CaptureFixture[str]) -> None:
    relay = PrintRelay(interval=3600)  # drained by hand below
    try:
        spool = os.path.join(relay.directory, "7-0-0-abc.out")
        with open(spool, "w") as f:
            f.write("1> a\n1> b")  # the second line is not complete yet
        relay.drain()
        with open(spool, "a") as f:
            f.write("\n1> c\n")
        os.replace(spool, spool.removesuffix(".out") + ".done")  # the sink closed it
        relay.drain()
        relay.drain()
        assert capsys.readouterr().out == "1> a\n1> b\n1> c\n"
        assert os.listdir(relay.directory) == []
    finally:
        relay.close()
