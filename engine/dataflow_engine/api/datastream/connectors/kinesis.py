"""PyFlink's ``pyflink.datastream.connectors.kinesis``: refused, as there is no Kinesis connector
yet (each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

KinesisShardAssigner = refused("pyflink.datastream.connectors.kinesis.KinesisShardAssigner")
KinesisDeserializationSchema = refused(
    "pyflink.datastream.connectors.kinesis.KinesisDeserializationSchema")
WatermarkTracker = refused("pyflink.datastream.connectors.kinesis.WatermarkTracker")
PartitionKeyGenerator = refused("pyflink.datastream.connectors.kinesis.PartitionKeyGenerator")
FlinkKinesisConsumer = refused("pyflink.datastream.connectors.kinesis.FlinkKinesisConsumer")
KinesisStreamsSink = refused("pyflink.datastream.connectors.kinesis.KinesisStreamsSink")
KinesisStreamsSinkBuilder = refused(
    "pyflink.datastream.connectors.kinesis.KinesisStreamsSinkBuilder")
KinesisFirehoseSink = refused("pyflink.datastream.connectors.kinesis.KinesisFirehoseSink")
KinesisFirehoseSinkBuilder = refused(
    "pyflink.datastream.connectors.kinesis.KinesisFirehoseSinkBuilder")

__all__ = ["FlinkKinesisConsumer", "KinesisDeserializationSchema", "KinesisFirehoseSink",
           "KinesisFirehoseSinkBuilder", "KinesisShardAssigner", "KinesisStreamsSink",
           "KinesisStreamsSinkBuilder", "PartitionKeyGenerator", "WatermarkTracker"]
