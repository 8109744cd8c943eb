"""``pyflink.datastream.connectors`` for this engine: the sources ``env.from_source`` takes
and the sinks ``stream.sink_to`` takes, named as Flink's connectors name them.

Besides its own names, PyFlink's package still offers those of its connector modules that
programs of older versions import from here; so does this one, refusing the connectors this
engine does not have (JDBC, dynamic Kafka, Pulsar, RabbitMQ).
"""

from dataflow_engine.api.datastream.connectors.base import DeliveryGuarantee, Sink, Source
from dataflow_engine.api.datastream.connectors.datagen import (
    DataGeneratorSource,
    RateLimiterStrategy,
)
from dataflow_engine.api.datastream.connectors.dynamic_kafka import (
    DynamicKafkaSource,
    DynamicKafkaSourceBuilder,
    KafkaMetadataService,
    KafkaRecordDeserializationSchema,
    KafkaStreamSetSubscriber,
    KafkaStreamSubscriber,
    SingleClusterTopicMetadataService,
    StreamPatternSubscriber,
)
from dataflow_engine.api.datastream.connectors.file_system import (
    BucketAssigner,
    FileEnumeratorProvider,
    FileSink,
    FileSource,
    FileSourceBuilder,
    FileSplitAssignerProvider,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
    StreamingFileSink,
)
from dataflow_engine.api.datastream.connectors.jdbc import (
    JdbcConnectionOptions,
    JdbcExecutionOptions,
    JdbcSink,
)
from dataflow_engine.api.datastream.connectors.kafka import (
    FlinkKafkaConsumer,
    FlinkKafkaProducer,
    KafkaSource,
    Semantic,
)
from dataflow_engine.api.datastream.connectors.number_seq import NumberSequenceSource
from dataflow_engine.api.datastream.connectors.pulsar import (
    PulsarSource,
    PulsarSourceBuilder,
    StartCursor,
    StopCursor,
)
from dataflow_engine.api.datastream.connectors.rabbitmq import (
    RMQConnectionConfig,
    RMQSink,
    RMQSource,
)

__all__ = [
    "BucketAssigner",
    "DataGeneratorSource",
    "DeliveryGuarantee",
    "DynamicKafkaSource",
    "DynamicKafkaSourceBuilder",
    "FileEnumeratorProvider",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "FileSplitAssignerProvider",
    "FlinkKafkaConsumer",
    "FlinkKafkaProducer",
    "JdbcConnectionOptions",
    "JdbcExecutionOptions",
    "JdbcSink",
    "KafkaMetadataService",
    "KafkaRecordDeserializationSchema",
    "KafkaSource",
    "KafkaStreamSetSubscriber",
    "KafkaStreamSubscriber",
    "NumberSequenceSource",
    "OutputFileConfig",
    "PulsarSource",
    "PulsarSourceBuilder",
    "RMQConnectionConfig",
    "RMQSink",
    "RMQSource",
    "RateLimiterStrategy",
    "RollingPolicy",
    "Semantic",
    "SingleClusterTopicMetadataService",
    "Sink",
    "Source",
    "StartCursor",
    "StopCursor",
    "StreamFormat",
    "StreamPatternSubscriber",
    "StreamingFileSink",
]
