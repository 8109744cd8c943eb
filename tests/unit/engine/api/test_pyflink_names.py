"""Every public name of PyFlink's DataStream modules (the list hack/pyflink-names recorded
from the pinned apache-flink wheel) is in dataflow_engine.api under the same path: real, or a
placeholder refusing on use with what to do instead; docs/pyflink.md's table is generated."""

from __future__ import annotations

import importlib
import pickle
import typing
from pathlib import Path

import pytest

from dataflow_engine.api import StreamExecutionEnvironment
from dataflow_engine.api._refusals import REASONS
from dataflow_engine.api._unsupported import NotSupportedError, is_refused, refused_name
from dataflow_engine.api.common import Instant, JobStatus, RowKind
from dataflow_engine.api.datastream.connectors import NumberSequenceSource
from dataflow_engine.api.datastream.window import SessionWindowTimeGapExtractor
from dataflow_engine.api.pyflink_coverage import (
    BEGIN,
    END,
    Recorded,
    coverage,
    read_recorded,
    render,
    replace_section,
    resolve,
)
from dataflow_engine.runtime.windowing.assigners import SupportsExtract

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
RECORDED = read_recorded()
COVERED = coverage(RECORDED.names)
REFUSED = sorted(COVERED.refused)


def test_the_recorded_list_is_pyflinks_pinned_version() -> None:
    install = (ROOT / "hack" / "install-pyflink").read_text()
    assert f"PYFLINK_VERSION={RECORDED.version}\n" in install
    assert len(RECORDED.names) == len(set(RECORDED.names)) > 200
    assert all(name.startswith("pyflink.") for name in RECORDED.names)
    assert "pyflink.datastream.connectors.FileSink" in RECORDED.names  # kept for old programs


def test_every_recorded_name_is_real_or_refused() -> None:
    assert COVERED.missing == ()
    assert len(COVERED.supported) + len(COVERED.refused) == len(RECORDED.names)


@pytest.mark.parametrize("dotted", RECORDED.names)
def test_a_recorded_name_imports_from_the_same_path(dotted: str) -> None:
    module, _, name = dotted.rpartition(".")
    imported = importlib.import_module("dataflow_engine.api." + module.removeprefix("pyflink."))
    value = getattr(imported, name)
    assert value is resolve(dotted)
    if dotted in COVERED.refused:
        assert is_refused(value) and refused_name(value).rpartition(".")[2] == name
    else:
        assert not is_refused(value)


def test_the_walker_reports_a_name_missing_from_both() -> None:
    names = ("pyflink.common.Types", "pyflink.common.NoSuchName",
             "pyflink.datastream.no_such_module.Thing", "pyflink.common.SerializationSchema")
    covered = coverage(names)
    assert covered.supported == ("pyflink.common.Types",)
    assert covered.refused == {
        "pyflink.common.SerializationSchema": "pyflink.common.serialization.SerializationSchema"}
    assert covered.missing == ("pyflink.common.NoSuchName",
                               "pyflink.datastream.no_such_module.Thing")
    with pytest.raises(ValueError, match=r"pyflink\.common\.NoSuchName"):
        render(Recorded("0", names), covered)


def test_every_refusal_is_of_a_recorded_name_and_used() -> None:
    assert set(REASONS) <= set(RECORDED.names)
    assert set(COVERED.refused.values()) == set(REASONS)


@pytest.mark.parametrize("dotted", REFUSED)
def test_using_a_refused_name_says_what_to_do_instead(dotted: str) -> None:
    placeholder = resolve(dotted)
    name = refused_name(placeholder)
    expected = f"{name} is not supported yet by dataflow_engine.api: {REASONS[name]}"
    assert isinstance(placeholder, type)
    with pytest.raises(NotSupportedError) as created:
        placeholder()
    assert str(created.value) == expected
    with pytest.raises(NotSupportedError, match="not supported yet"):
        placeholder.builder  # noqa: B018  (a PyFlink program's first use is often a builder)


def test_a_placeholder_imports_subclasses_and_annotates_without_error() -> None:
    from dataflow_engine.api.datastream import AsyncFunction
    from dataflow_engine.api.datastream.connectors.kafka import KafkaSinkBuilder

    class Lookup(AsyncFunction[str, int]):
        async def async_invoke(self, value: str) -> list[int]:
            return [len(value)]

    def build(builder: KafkaSinkBuilder | None) -> AsyncFunction[str, int]:
        return Lookup

    hints = typing.get_type_hints(build, localns=locals())
    assert hints == {"builder": KafkaSinkBuilder | None, "return": AsyncFunction}
    assert not hasattr(AsyncFunction, "__wrapped__")  # introspection sees AttributeErrors
    assert pickle.loads(pickle.dumps(AsyncFunction)) is AsyncFunction
    assert issubclass(NotSupportedError, NotImplementedError)
    with pytest.raises(NotSupportedError,
                       match=r"^pyflink\.datastream\.functions\.AsyncFunction is not "):
        Lookup()


def test_refusing_is_lazy_an_unused_import_changes_nothing() -> None:
    from dataflow_engine.api.datastream import HashMapStateBackend  # noqa: F401

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).print()
    assert [op.type.value for op in env.build_spec().pipeline] == ["collection", "print"]


def test_simple_value_classes_behave_as_pyflinks() -> None:
    assert [str(kind) for kind in RowKind] == ["+I", "-U", "+U", "-D"]
    assert Instant.of_epoch_milli(-1) == Instant(-1, 999_000_000)
    assert Instant.of_epoch_milli(-1).to_epoch_milli() == -1
    assert Instant(3, 1_500_000).to_epoch_milli() == 3001
    assert repr(Instant(3, 5)) == "Instant<3, 5>"
    assert JobStatus.FINISHED.is_globally_terminal and not JobStatus.SUSPENDED.is_globally_terminal


def test_a_gap_extractor_subclass_is_what_dynamic_sessions_take() -> None:
    class Gap(SessionWindowTimeGapExtractor):
        def extract(self, element: tuple[str, int]) -> int:
            return element[1]

    assert isinstance(Gap(), SupportsExtract)
    with pytest.raises(TypeError):
        SessionWindowTimeGapExtractor()


def test_number_sequence_source_is_from_sequences_source() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_source(NumberSequenceSource(1, 10), source_name="numbers").print()
    env.from_sequence(1, 10).print()
    numbers, _, sequence, _ = env.build_spec().pipeline
    assert (numbers.name, numbers.type, numbers.args) == ("numbers", sequence.type,
                                                          sequence.args)
    with pytest.raises(ValueError, match="NumberSequenceSource: end 1 is less than start 2"):
        NumberSequenceSource(2, 1)


def test_docs_pyflink_table_is_what_hack_pyflink_coverage_generates() -> None:
    document = (ROOT / "docs" / "pyflink.md").read_text()
    section = document[document.index(BEGIN):document.index(END) + len(END)]
    assert section == render(RECORDED, COVERED), (
        "docs/pyflink.md's table is stale: run .venv/bin/python hack/pyflink-coverage")


def test_the_table_counts_and_lists_every_refusal() -> None:
    table = render(RECORDED, COVERED)
    assert (f"| all | | {len(RECORDED.names)} | {len(COVERED.supported)} "
            f"| {len(COVERED.refused)} |") in table
    assert all(f"| `{name}` |" in table for name in REASONS)
    assert ("| `pyflink.common.serialization.SerializationSchema` | "
            "`pyflink.common.SerializationSchema` |") in table
    assert replace_section(f"a\n{BEGIN}\nold\n{END}\nb", "new") == "a\nnew\nb"
    with pytest.raises(ValueError, match="has no"):
        replace_section("no markers", "new")
