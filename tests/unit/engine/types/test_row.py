"""Row and RowKind behave as PyFlink's: fields by position and by name, the row kind, the
dict form, rows of names as factories, equality, hashing and pickling."""

from __future__ import annotations

import pickle

import pytest

from dataflow_engine.api.common import Row as ApiRow
from dataflow_engine.types import Row, RowKind

pytestmark = pytest.mark.unit


def test_the_api_names_the_engines_row() -> None:
    assert ApiRow is Row


def test_a_named_row_reaches_its_fields_by_name_and_position() -> None:
    row = Row(id=1, info="hello")
    assert (row.id, row["info"], row[0], row[-1], row[0:2]) == (1, "hello", 1, "hello",
                                                               [1, "hello"])
    assert list(row) == [1, "hello"] and len(row) == 2
    assert "info" in row and "hello" not in row  # a named row contains its names
    assert row.as_dict() == {"id": 1, "info": "hello"}
    assert row.get_fields_by_names(["info", "id"]) == ["hello", 1]
    with pytest.raises(AttributeError):
        row.tel  # noqa: B018
    with pytest.raises(KeyError):
        row["tel"]
    with pytest.raises(KeyError, match="tel"):
        row.get_fields_by_names(["tel"])


def test_a_row_by_position_has_no_names() -> None:
    row = Row(1, "hello")
    assert "hello" in row and row.get_field_names() is None
    assert row.get_fields_by_names(["a"]) == [1, "hello"]
    with pytest.raises(TypeError):
        row.as_dict()
    with pytest.raises(KeyError):
        row["id"]
    with pytest.raises(ValueError, match="not both"):
        Row(1, info="hello")


def test_fields_are_set_by_index_or_name_never_as_attributes() -> None:
    row = Row(id=1, info="a")
    row[0] = 2
    row["info"] = "b"
    assert row.as_dict() == {"id": 2, "info": "b"}
    with pytest.raises(AttributeError):
        row.id = 3


def test_the_row_kind_is_insert_until_set_and_prints_short() -> None:
    row = Row(1)
    assert row.get_row_kind() is RowKind.INSERT
    row.set_row_kind(RowKind.UPDATE_BEFORE)
    assert Row.of_kind(RowKind.DELETE, 1).get_row_kind() is RowKind.DELETE
    assert [str(kind) for kind in RowKind] == ["+I", "-U", "+U", "-D"]
    assert row != Row(1)  # the kind is part of equality ...
    assert hash(row) == hash(Row(1))  # ... and not of the hash


def test_a_row_of_names_makes_rows() -> None:
    person = Row("name", "age")
    assert person("Alice", 11) == Row(name="Alice", age=11)
    assert repr(person("Alice", 11)) == "Row(name='Alice', age=11)"
    with pytest.raises(ValueError, match="names 2 fields, not 3"):
        person("Alice", 11, "x")


def test_named_rows_are_equal_by_names_whatever_their_order() -> None:
    assert Row(a=1, b=2) == Row(b=2, a=1)
    assert Row(a=1, b=2) != Row(a=1, c=2)
    assert Row(a=1) != Row(1) and Row(1) != (1,)
    assert Row(1, 2) == Row(1, 2) and Row(1, 2) != Row(2, 1)


def test_as_dict_recursive_turns_nested_rows_in_lists_and_dicts_into_dicts() -> None:
    row = Row(key=1, value=Row(name="a", tags=[Row(t="x")], extra={"k": Row(n=2)}))
    assert row.as_dict() == {"key": 1, "value": Row(name="a", tags=[Row(t="x")],
                                                    extra={"k": Row(n=2)})}
    assert row.as_dict(recursive=True) == {
        "key": 1, "value": {"name": "a", "tags": [{"t": "x"}], "extra": {"k": {"n": 2}}}}


@pytest.mark.parametrize("row", [Row(id=1, info="x"), Row(1, "x"),
                                 Row.of_kind(RowKind.UPDATE_AFTER, a=[1, 2])])
def test_a_row_pickles_with_its_names_and_kind(row: Row) -> None:
    again = pickle.loads(pickle.dumps(row))
    assert again == row and repr(again) == repr(row)
    assert again.get_row_kind() is row.get_row_kind()
    assert again.get_field_names() == row.get_field_names()


def test_reprs_are_pyflinks() -> None:
    assert repr(Row(1, "x")) == "<Row(1, 'x')>"
    assert repr(Row(id=1, info=None)) == "Row(id=1, info=None)"
