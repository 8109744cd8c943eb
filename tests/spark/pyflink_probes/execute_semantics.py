"""Probe: what a PyFlink program sees around ``env.execute()``.

    python execute_semantics.py

(iv) the default parallelism, before anything sets one; (i) the exception a failed job
raises in the program; (ii) a second ``execute()`` after adding a new sink: does the first
sink run again; (iii) where ``print()`` inside a map function goes, and in which order with
the print sink's lines; (v) the types ``execute()`` returns (their ids are random, so only
type names and the shape of ``str()`` are printed).
"""

import re

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

HEX_ID = re.compile(r"[0-9a-f]{32}")


def fail(value: int) -> int:
    if value == 2:
        raise ValueError(f"boom {value}")
    return value


def noisy(value: int) -> int:
    print("from map", value)
    return value * 10


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    print("(iv) default get_parallelism():", env.get_parallelism(), flush=True)
    env.set_parallelism(1)

    print("== (i) a map that raises", flush=True)
    env.from_collection([1, 2, 3], type_info=Types.INT()) \
        .map(fail, output_type=Types.INT()).print()
    try:
        env.execute("failing job")
        print("no exception", flush=True)
    except Exception as error:  # the probe reports whatever arrives
        text = str(error)
        print("module:", type(error).__module__, flush=True)
        print("type:", type(error).__name__, flush=True)
        print("first line:", text.splitlines()[0] if text else "", flush=True)
        print("mentions 'ValueError: boom 2':", "ValueError: boom 2" in text, flush=True)
        print("mentions 'JobExecutionException':", "JobExecutionException" in text,
              flush=True)

    print("== (ii) first execute", flush=True)
    env.from_collection(["first"], type_info=Types.STRING()).print()
    env.execute("first")
    print("== (ii) second execute, with a new sink", flush=True)
    env.from_collection(["second"], type_info=Types.STRING()).print()
    env.execute("second")

    print("== (iii) print() inside a map", flush=True)
    env.from_collection([1, 2, 3], type_info=Types.INT()) \
        .map(noisy, output_type=Types.INT()).print()
    env.execute("print in map")

    print("== (v) what execute() returns", flush=True)
    env.from_collection([1], type_info=Types.INT()).print()
    result = env.execute("result types")
    job_id = result.get_job_id()
    print("result:", type(result).__module__, type(result).__name__, flush=True)
    print("get_job_id():", type(job_id).__module__, type(job_id).__name__, flush=True)
    print("str(job id) is 32 hex digits:", HEX_ID.fullmatch(str(job_id)) is not None,
          flush=True)
    print("get_net_runtime():", type(result.get_net_runtime()).__name__, flush=True)
    print("get_all_accumulator_results():", result.get_all_accumulator_results(), flush=True)
    shape = re.sub(r"@[0-9a-f]+", "@<hash>", HEX_ID.sub("<job id>", str(result)))
    print("str(result), numbers as N:", re.sub(r"\d+", "N", shape), flush=True)


if __name__ == "__main__":
    main()
