# Connected streams with a CoMapFunction, and execute_and_collect.
from pyflink.common import Types
from pyflink.datastream import CoMapFunction, StreamExecutionEnvironment


class Label(CoMapFunction):
    def map1(self, value):
        return "order", str(value)

    def map2(self, value):
        return "rate", value


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
orders = env.from_collection([1, 2, 3], type_info=Types.INT())
rates = env.from_collection(["eur", "usd"], type_info=Types.STRING())
with orders.connect(rates).map(Label(), output_type=Types.TUPLE(
        [Types.STRING(), Types.STRING()])).execute_and_collect() as results:
    for result in sorted(results, key=str):
        print(result)
