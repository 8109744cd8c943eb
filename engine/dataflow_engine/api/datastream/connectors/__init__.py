"""``pyflink.datastream.connectors`` for this engine: the sources ``env.from_source`` takes
and the sinks ``stream.sink_to`` takes, named as Flink's connectors name them.

Besides its own names, PyFlink's package still offers those of its connector modules that
programs of older versions import from here; so does this one, refusing the connectors this
engine does not have (JDBC, dynamic Kafka, Pulsar, RabbitMQ).
"""

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.datastream.connectors.base import DeliveryGuarantee, Sink, Source
from dataflow_engine.api.datastream.connectors.datagen import (
    DataGeneratorSource,
    RateLimiterStrategy,
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
from dataflow_engine.api.datastream.connectors.kafka import (
    FlinkKafkaConsumer,
    FlinkKafkaProducer,
    KafkaSource,
    Semantic,
)
from dataflow_engine.api.datastream.connectors.number_seq import NumberSequenceSource

JdbcSink = refused("pyflink.datastream.connectors.JdbcSink")
JdbcConnectionOptions = refused("pyflink.datastream.connectors.JdbcConnectionOptions")
JdbcExecutionOptions = refused("pyflink.datastream.connectors.JdbcExecutionOptions")
DynamicKafkaSource = refused("pyflink.datastream.connectors.DynamicKafkaSource")
DynamicKafkaSourceBuilder = refused("pyflink.datastream.connectors.DynamicKafkaSourceBuilder")
KafkaMetadataService = refused("pyflink.datastream.connectors.KafkaMetadataService")
KafkaRecordDeserializationSchema = refused(
    "pyflink.datastream.connectors.KafkaRecordDeserializationSchema")
KafkaStreamSetSubscriber = refused("pyflink.datastream.connectors.KafkaStreamSetSubscriber")
KafkaStreamSubscriber = refused("pyflink.datastream.connectors.KafkaStreamSubscriber")
StreamPatternSubscriber = refused("pyflink.datastream.connectors.StreamPatternSubscriber")
SingleClusterTopicMetadataService = refused(
    "pyflink.datastream.connectors.SingleClusterTopicMetadataService")
PulsarSource = refused("pyflink.datastream.connectors.PulsarSource")
PulsarSourceBuilder = refused("pyflink.datastream.connectors.PulsarSourceBuilder")
StartCursor = refused("pyflink.datastream.connectors.StartCursor")
StopCursor = refused("pyflink.datastream.connectors.StopCursor")
RMQSource = refused("pyflink.datastream.connectors.RMQSource")
RMQSink = refused("pyflink.datastream.connectors.RMQSink")
RMQConnectionConfig = refused("pyflink.datastream.connectors.RMQConnectionConfig")

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
