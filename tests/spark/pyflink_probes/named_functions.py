"""Probe: a PyFlink program whose functions all have names at its top level (no lambdas, no
nested functions), as a program must be to become a DataflowJob manifest
(``dataflow manifest named_functions.py``), so the same program runs here, under PyFlink,
and through the operator, and prints the same.

A running word count: typed records from a collection, a flat_map generator, a key selector
with a declared key type, a KeyedProcessFunction with ValueState, and a MapFunction class
that formats the result. The words come from one subtask, so each subtask of the counts
prints its lines in their order.
"""

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction
from pyflink.datastream.state import ValueStateDescriptor

LINES = ["to be or not to be", "that is the question", "whether tis nobler in the mind",
         "to suffer the slings and arrows"]
PAIR = Types.TUPLE([Types.STRING(), Types.INT()])


def split(line):
    for word in line.split():
        yield word, 1


def word_of(pair):
    return pair[0]


class RunningCount(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))

    def process_element(self, value, ctx):
        total = (self.count.value() or 0) + value[1]
        self.count.update(total)
        yield value[0], total


class Shout(MapFunction):
    def map(self, value):
        return f"{value[0].upper()}={value[1]}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
    env.set_parallelism(2)
    counts = env.from_collection(LINES, type_info=Types.STRING()) \
        .flat_map(split, output_type=PAIR).set_parallelism(1) \
        .key_by(word_of, key_type=Types.STRING()) \
        .process(RunningCount(), output_type=PAIR)
    counts.print()
    counts.map(Shout(), output_type=Types.STRING()).print()
    env.execute("named_functions")


if __name__ == "__main__":
    main()
