# The CountWithTimeoutFunction of PyFlink's process function documentation.
from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import (
    KeyedProcessFunction,
    RuntimeContext,
    RuntimeExecutionMode,
    StreamExecutionEnvironment,
)
from pyflink.datastream.state import ValueStateDescriptor


class MyTimestampAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[2])


class CountWithTimeoutFunction(KeyedProcessFunction):

    def __init__(self):
        self.state = None

    def open(self, runtime_context: RuntimeContext):
        self.state = runtime_context.get_state(ValueStateDescriptor(
            "my_state", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        current = self.state.value()
        if current is None:
            current = [value[0], 0, 0]
        current[1] += 1
        current[2] = ctx.timestamp()
        self.state.update(current)
        ctx.timer_service().register_event_time_timer(current[2] + 60000)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        result = self.state.value()
        if timestamp == result[2] + 60000:
            yield result[0], result[1]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.set_runtime_mode(RuntimeExecutionMode.STREAMING)
ds = env.from_collection(
    [("hi", 1, 1000), ("hello", 2, 2000), ("hi", 3, 70000), ("hi", 4, 71000),
     ("hello", 5, 140000)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()]))
(ds.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
        .with_timestamp_assigner(MyTimestampAssigner()))
   .key_by(lambda value: value[0])
   .process(CountWithTimeoutFunction())
   .print())
env.execute()
