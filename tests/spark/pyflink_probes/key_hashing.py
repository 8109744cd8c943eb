"""Probe: which parallel subtask PyFlink sends each key to after ``key_by``.

    python key_hashing.py PARALLELISM

Four jobs, one ``execute()`` each, after a header line: string keys and int keys, each once
with a Python key selector alone (the key travels pickled) and once with a declared
``key_type``. Every record is ``(key, index)``, printed by the print sink after an identity
``map``, so a line ``N> (key,index)`` says that key went to subtask N-1. Lines of different
subtasks interleave in any order: compare them sorted.
"""

import sys

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

STRING_KEYS = [
    *"abcdefghijklmnopqrstuvwxyz",
    "hello", "world", "Alice", "Bob", "China", "Germany", "USA", "flink",
    "key-0", "key-1", "key-10", "", "\u00fcber", "\u65e5\u672c",
]
INT_KEYS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 42, 100, 1000, 65536, -1, -7, -1000,
            2**31 - 1, -(2**31)]


def run(env: StreamExecutionEnvironment, title: str, keys: list, key_type: object,
        value_type: object) -> None:
    print(f"== {title}", flush=True)
    row = Types.TUPLE([value_type, Types.INT()])
    records = [(key, index) for index, key in enumerate(keys)]
    ds = env.from_collection(records, type_info=row)
    if key_type is None:
        keyed = ds.key_by(lambda record: record[0])
    else:
        keyed = ds.key_by(lambda record: record[0], key_type=key_type)
    keyed.map(lambda record: record, output_type=row).print()
    env.execute(title)


def main() -> None:
    parallelism = int(sys.argv[1])
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    print(f"parallelism {env.get_parallelism()}", flush=True)
    run(env, "string keys, no key_type", STRING_KEYS, None, Types.STRING())
    run(env, "string keys, key_type=Types.STRING()", STRING_KEYS, Types.STRING(),
        Types.STRING())
    run(env, "int keys, no key_type", INT_KEYS, None, Types.INT())
    run(env, "int keys, key_type=Types.INT()", INT_KEYS, Types.INT(), Types.INT())


if __name__ == "__main__":
    main()
