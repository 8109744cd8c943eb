"""Probe: how records of PyFlink's non-parallel ``from_collection`` source spread over the
subtasks of an operator of a higher parallelism (Flink puts a round-robin rebalance between
them).

    python rebalance.py PARALLELISM

Twelve INT records, an identity ``map`` with a declared output type and the print sink, so a
line ``N> value`` says which subtask got the value. Lines of different subtasks interleave in
any order: compare them sorted.
"""

import sys

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(int(sys.argv[1]))
    env.from_collection(list(range(12)), type_info=Types.INT()) \
        .map(lambda value: value, output_type=Types.INT()) \
        .print()
    env.execute("rebalance")


if __name__ == "__main__":
    main()
