"""Probe: how PyFlink's print sink writes records of each declared type, and what FLOAT state
does to sums.

    python type_printing.py

Parallelism 1; one small job per case, each after a header line ``== case``, so the output
order is fixed. A case whose job fails prints ``!! <exception type>`` and the lines of its
message that name the cause, and the probe goes on. Records of a declared Java-side type are
printed by Java (``toString`` of Flink's tuples, rows, lists, ...); a top-level ROW and an
undeclared (pickled) stream are first turned into strings by PyFlink's Python side.
"""

import datetime
import math
import re
from collections.abc import Callable
from decimal import Decimal

from pyflink.common import Row, Types
from pyflink.common.time import Instant
from pyflink.datastream import DataStream, StreamExecutionEnvironment

FLOATS = [110.1, 1e7, 1e-4, 0.001, 123456789.0, -0.0, 0.1, 1.5, 100.0, 1e20, 1e-7,
          12345.678, 3.4e38]
CAUSE = re.compile(r"^(\w+\.)*\w+(Error|Exception)\b")

Build = Callable[[StreamExecutionEnvironment], DataStream]


def show(env: StreamExecutionEnvironment, title: str, build: Build) -> None:
    print(f"== {title}", flush=True)
    step = "building the job"
    try:
        build(env).print()
        step = "execute()"
        env.execute(title)
    except Exception as error:  # the probe reports whatever a case raises
        lines = [line.strip().removeprefix(": ").removeprefix("Caused by: ")
                 for line in str(error).splitlines() if line.strip()]
        causes = list(dict.fromkeys(line for line in lines if CAUSE.match(line)))
        print(f"!! {step} raised {type(error).__name__}: {lines[0] if lines else ''}",
              flush=True)
        for line in causes[-2:]:
            print(f"!!   {line[:300]}", flush=True)


def tuple_of_basics(env: StreamExecutionEnvironment) -> DataStream:
    longs = [1, -1, 2**40, 2**63 - 1, -(2**63), 0]
    records = [(f"r{index}", index - 3, value, value, index % 2 == 0, longs[index % len(longs)])
               for index, value in enumerate(FLOATS)]
    return env.from_collection(records, type_info=Types.TUPLE([
        Types.STRING(), Types.INT(), Types.FLOAT(), Types.DOUBLE(), Types.BOOLEAN(),
        Types.LONG()]))


def tuple_of_non_finite(env: StreamExecutionEnvironment) -> DataStream:
    records = [("nan", math.nan, math.nan), ("inf", math.inf, math.inf),
               ("-inf", -math.inf, -math.inf)]
    return env.from_collection(records, type_info=Types.TUPLE([
        Types.STRING(), Types.FLOAT(), Types.DOUBLE()]))


def keyed_float_sums(env: StreamExecutionEnvironment) -> DataStream:
    records = [("Alice", 110.1), ("Bob", 30.2), ("Alice", 20.0), ("Bob", 53.1),
               ("Alice", 13.1), ("Bob", 3.1), ("Bob", 16.1), ("Alice", 20.1),
               *[("tenths", 0.1)] * 10]
    return env.from_collection(records, type_info=Types.TUPLE([Types.STRING(), Types.FLOAT()])) \
        .key_by(lambda record: record[0]) \
        .reduce(lambda total, record: (total[0], total[1] + record[1]))


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    show(env, "TUPLE(STRING, INT, FLOAT, DOUBLE, BOOLEAN, LONG)", tuple_of_basics)
    show(env, "TUPLE(STRING, FLOAT, DOUBLE) NaN and infinities", tuple_of_non_finite)
    show(env, "TUPLE(STRING, INT) with None in the STRING field",
         lambda env: env.from_collection(
             [("a", 1), (None, 2)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])))
    show(env, "TUPLE(STRING, INT) with None in the INT field",
         lambda env: env.from_collection(
             [("a", 1), ("b", None)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])))
    show(env, "top-level DOUBLE",
         lambda env: env.from_collection(FLOATS, type_info=Types.DOUBLE()))
    show(env, "top-level FLOAT",
         lambda env: env.from_collection(FLOATS, type_info=Types.FLOAT()))
    show(env, "top-level INT",
         lambda env: env.from_collection([7, -7, 2**31 - 1], type_info=Types.INT()))
    show(env, "top-level BOOLEAN",
         lambda env: env.from_collection([True, False], type_info=Types.BOOLEAN()))
    show(env, "top-level LONG",
         lambda env: env.from_collection([2**40, -1], type_info=Types.LONG()))
    show(env, "top-level STRING",
         lambda env: env.from_collection(
             ["plain", "", "with, comma", "(paren)", "\u00fcber \u65e5\u672c", "a'quote"],
             type_info=Types.STRING()))
    show(env, "top-level ROW_NAMED(id INT, name STRING, score DOUBLE, ratio FLOAT)",
         lambda env: env.from_collection(
             [Row(id=1, name="x", score=1e7, ratio=110.1), (2, "y, z", 0.1, 0.5)],
             type_info=Types.ROW_NAMED(["id", "name", "score", "ratio"], [
                 Types.INT(), Types.STRING(), Types.DOUBLE(), Types.FLOAT()])))
    show(env, "top-level ROW(INT, STRING, BOOLEAN)",
         lambda env: env.from_collection(
             [Row(1, "x", True), (2, "y", False)],
             type_info=Types.ROW([Types.INT(), Types.STRING(), Types.BOOLEAN()])))
    show(env, "top-level ROW(INT, STRING) with None in the STRING field",
         lambda env: env.from_collection(
             [Row(1, None)], type_info=Types.ROW([Types.INT(), Types.STRING()])))
    show(env, "TUPLE(STRING, ROW(INT, STRING, DOUBLE)): a ROW nested in a TUPLE",
         lambda env: env.from_collection(
             [("a", Row(1, "x", 1e7))],
             type_info=Types.TUPLE([Types.STRING(), Types.ROW(
                 [Types.INT(), Types.STRING(), Types.DOUBLE()])])))
    show(env, "TUPLE(STRING, ROW_NAMED(id INT, name STRING)): a named ROW nested in a TUPLE",
         lambda env: env.from_collection(
             [("a", Row(id=1, name="x"))],
             type_info=Types.TUPLE([Types.STRING(), Types.ROW_NAMED(
                 ["id", "name"], [Types.INT(), Types.STRING()])])))
    show(env, "TUPLE(STRING, TUPLE(INT, STRING)): a TUPLE nested in a TUPLE",
         lambda env: env.from_collection(
             [("a", (1, "x"))],
             type_info=Types.TUPLE([Types.STRING(), Types.TUPLE(
                 [Types.INT(), Types.STRING()])])))
    show(env, "TUPLE(STRING, LIST(INT))",
         lambda env: env.from_collection(
             [("a", [1, 2, 3]), ("empty", [])],
             type_info=Types.TUPLE([Types.STRING(), Types.LIST(Types.INT())])))
    show(env, "TUPLE(STRING, MAP(STRING, INT)) with one entry",
         lambda env: env.from_collection(
             [("a", {"k": 1})],
             type_info=Types.TUPLE([Types.STRING(), Types.MAP(Types.STRING(), Types.INT())])))
    show(env, "TUPLE(STRING, BASIC_ARRAY(STRING))",
         lambda env: env.from_collection(
             [("a", ["x", "y"])],
             type_info=Types.TUPLE([Types.STRING(), Types.BASIC_ARRAY(Types.STRING())])))
    show(env, "TUPLE(STRING, PRIMITIVE_ARRAY(INT))",
         lambda env: env.from_collection(
             [("a", [1, -2, 3])],
             type_info=Types.TUPLE([Types.STRING(), Types.PRIMITIVE_ARRAY(Types.INT())])))
    show(env, "TUPLE(STRING, PRIMITIVE_ARRAY(BYTE))",
         lambda env: env.from_collection(
             [("a", b"\x00\x01\x7f\x80\xff")],
             type_info=Types.TUPLE([Types.STRING(), Types.PRIMITIVE_ARRAY(Types.BYTE())])))
    show(env, "TUPLE(STRING, BIG_DEC)",
         lambda env: env.from_collection(
             [("a", Decimal("1.10")), ("b", Decimal("123456789.123456789")),
              ("c", Decimal("1E+3")), ("d", Decimal("-0.5")), ("e", Decimal("0"))],
             type_info=Types.TUPLE([Types.STRING(), Types.BIG_DEC()])))
    show(env, "TUPLE(STRING, SQL_DATE)",
         lambda env: env.from_collection(
             [("a", datetime.date(2024, 1, 2)), ("b", datetime.date(1969, 12, 31))],
             type_info=Types.TUPLE([Types.STRING(), Types.SQL_DATE()])))
    show(env, "TUPLE(STRING, SQL_TIME)",
         lambda env: env.from_collection(
             [("a", datetime.time(12, 34, 56)), ("b", datetime.time(0, 0, 0, 123000))],
             type_info=Types.TUPLE([Types.STRING(), Types.SQL_TIME()])))
    show(env, "TUPLE(STRING, SQL_TIMESTAMP)",
         lambda env: env.from_collection(
             [("a", datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)),
              ("b", datetime.datetime(1970, 1, 1))],
             type_info=Types.TUPLE([Types.STRING(), Types.SQL_TIMESTAMP()])))
    show(env, "TUPLE(STRING, INSTANT)",
         lambda env: env.from_collection(
             [("a", Instant(1700000000, 123000000)), ("b", Instant(0, 0))],
             type_info=Types.TUPLE([Types.STRING(), Types.INSTANT()])))
    show(env, "TUPLE(STRING, BYTE, SHORT)",
         lambda env: env.from_collection(
             [("a", 127, -3), ("b", -128, 32767)],
             type_info=Types.TUPLE([Types.STRING(), Types.BYTE(), Types.SHORT()])))
    show(env, "TUPLE(STRING, CHAR) from a collection",
         lambda env: env.from_collection(
             [("a", "x")], type_info=Types.TUPLE([Types.STRING(), Types.CHAR()])))
    show(env, "TUPLE(STRING, CHAR) from a map",
         lambda env: env.from_collection(["x", "\u00e9"], type_info=Types.STRING()).map(
             lambda char: ("a", char),
             output_type=Types.TUPLE([Types.STRING(), Types.CHAR()])))
    show(env, "undeclared (pickled) records",
         lambda env: env.from_collection(
             [(1, "a"), {"k": 1, "n": [1.5, None]}, [1, 2], "s", 1.5, 1e7, True,
              ("nested", ("t",)), Row(1, "x"), Row(id=1, name="x"), Decimal("1.10"),
              datetime.date(2024, 1, 2)]))
    show(env, "undeclared (pickled) bytes record",
         lambda env: env.from_collection(["before", b"raw", "after"]))
    show(env, "undeclared (pickled) None record",
         lambda env: env.from_collection(["before", None, "after"]))
    show(env, "TUPLE(STRING, FLOAT) then an undeclared identity map (Python sees the value)",
         lambda env: env.from_collection(
             [("a", 110.1), ("b", 1e7), ("c", 0.1)],
             type_info=Types.TUPLE([Types.STRING(), Types.FLOAT()])).map(lambda r: r))
    show(env, "TUPLE(STRING, DOUBLE) then an undeclared identity map",
         lambda env: env.from_collection(
             [("a", 110.1), ("b", 1e7), ("c", 1e-7)],
             type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()])).map(lambda r: r))
    show(env, "FLOAT keyed reduce (sum), printed by Java", keyed_float_sums)
    show(env, "FLOAT keyed reduce (sum), repr() of each sum as Python sees it",
         lambda env: keyed_float_sums(env).map(
             lambda record: (record[0], repr(record[1])),
             output_type=Types.TUPLE([Types.STRING(), Types.STRING()])))


if __name__ == "__main__":
    main()
