"""The seeds' WordCount with the Python API: the same job as ``wordcount.yaml``.

Run it locally with ``python examples/wordcount.py``, or name it as ``wordcount:job`` (with
``examples/`` on the path) wherever a job target is accepted; ``job().to_manifest("wordcount")``
writes the equivalent DataflowJob manifest. Every function is a built-in of
:mod:`dataflow_engine.functions.library`, so executors need no user code.
"""

from __future__ import annotations

from dataflow_engine.api import RuntimeExecutionMode, StreamExecutionEnvironment
from dataflow_engine.functions.library import count_above_one, split_words

LINES = [
    "To be, or not to be,--that is the question:--",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune",
    "Or to take arms against a sea of troubles,",
    "And by opposing end them?--To die,--to sleep,--",
    "No more; and by a sleep to say we end",
    "The heartache, and the thousand natural shocks",
    "That flesh is heir to,--'tis a consummation",
    "Devoutly to be wish'd. To die,--to sleep;--",
]


def job() -> StreamExecutionEnvironment:
    """Source (parallelism 1) -> tokenize -> keyBy word -> sum counts -> keep repeats -> print."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.set_runtime_mode(RuntimeExecutionMode.AUTOMATIC)  # BATCH here: final counts only
    env.set_slots_per_executor(2)

    text = env.from_collection(LINES).name("source").set_parallelism(1)
    counts = (
        text.flat_map(split_words).name("tokenize")
        .key_by(0)
        .sum(1).name("counts")
    )
    counts.filter(count_above_one).name("frequent").print().name("out")
    return env


if __name__ == "__main__":
    job().execute("wordcount")
