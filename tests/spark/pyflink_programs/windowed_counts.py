# A PyFlink DataStream program, unchanged but for the prefix of its imports.
from pyflink.common import Duration, WatermarkStrategy
from pyflink.common.time import Time
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class CountPerWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, context.window().end, len(list(elements))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
data = env.from_collection(
    [("a", 1000), ("b", 2000), ("a", 3000), ("a", 7000), ("b", 12000)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
late = OutputTag("late", Types.TUPLE([Types.STRING(), Types.LONG()]))
counts = (data
          .assign_timestamps_and_watermarks(
              WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
              .with_timestamp_assigner(SecondField()))
          .key_by(lambda e: e[0], key_type=Types.STRING())
          .window(TumblingEventTimeWindows.of(Time.seconds(5)))
          .side_output_late_data(late)
          .process(CountPerWindow()))
counts.print()
counts.get_side_output(late).print()
env.execute("windowed counts")
