"""Why each PyFlink name this engine refuses is refused, and what a program does instead.

The one registry of refused names: ``_unsupported.refused`` builds their placeholders from it
and ``hack/pyflink-coverage`` lists it in docs/pyflink.md. A key is the PyFlink name of the
module that defines the class (``pyflink.common.serialization.Encoder``, not its re-export
``pyflink.common.Encoder``), or of the only recorded module that has it.
"""

_CONFIGURATION = ("there is no key-value configuration: set the job through the "
                  "StreamExecutionEnvironment's methods (set_parallelism, enable_checkpointing, "
                  "get_config(), ...) or the DataflowJob spec")
_RESTART = ("restarts are the DataflowJob's spec.restartStrategy (fixed-delay or none), "
            "applied by the operator to a job deployed from its manifest (to_manifest())")
_ASYNC = ("async I/O is not supported yet: call the service from a map() or process() "
          "function, one request at a time")
_STATE_BACKEND = ("keyed state lives in the engine's own state backend, written to checkpoints: "
                  "drop set_state_backend()")
_CHECKPOINT_STORAGE = ("name the checkpoints' directory with "
                       "env.get_checkpoint_config().set_checkpoint_storage_dir(path)")
_WINDOW_SERIALIZER = ("windows travel as pickled Python objects, so a WindowAssigner needs no "
                      "serializer: drop get_window_serializer()")
_JDBC = ("there is no JDBC connector yet: stream.sink_to() takes a FileSink or a KafkaSink "
         "(docs/pyflink.md)")
_DYNAMIC_KAFKA = ("there is no dynamic Kafka source yet: KafkaSource(bootstrap_servers, "
                  "topics=[...] or topic_pattern=...) reads the topics of one cluster")
_PULSAR = ("there is no Pulsar connector yet: the message-queue connectors are KafkaSource "
           "and KafkaSink (docs/pyflink.md)")
_RABBITMQ = ("there is no RabbitMQ connector yet: the message-queue connectors are KafkaSource "
             "and KafkaSink (docs/pyflink.md)")
_CASSANDRA = ("there is no Cassandra connector yet: stream.sink_to() takes a FileSink or a "
              "KafkaSink (docs/pyflink.md)")
_ELASTICSEARCH = ("there is no Elasticsearch connector yet: stream.sink_to() takes a FileSink "
                  "or a KafkaSink (docs/pyflink.md)")
_KINESIS = ("there is no Kinesis connector yet: the message-queue connectors are KafkaSource "
            "and KafkaSink (docs/pyflink.md)")
_HYBRID = ("a HybridSource's switch from one source to the next is not supported yet: read "
           "each source with from_source() and union() the streams, or run the bounded part "
           "as a job of its own first")
_PREPROCESSING = ("connectors here have no Java-side stream transformers: transform the stream "
                  "with map() or filter() after from_source() or before sink_to()")
_BULK = ("bulk formats are not supported yet: FileSink(path, format='text' or 'json') writes "
         "lines")
_AVRO_FILES = ("the Avro file formats are not supported yet: FileSink(path, format='json') "
               "writes records as JSON lines; a KafkaSource and a KafkaSink read and write "
               "Avro rows with AvroRowDeserializationSchema and AvroRowSerializationSchema")
_FILE_LISTING = "FileSource lists and assigns the files itself: FileSource(*paths)"
_CSV_READ = ("the CSV file formats are not supported yet: read text lines (FileSource) and "
             "split them in a map(); a KafkaSource reads CSV rows with "
             "CsvRowDeserializationSchema")
_CSV_WRITE = ("the CSV file formats are not supported yet: format each line in a map() and "
              "write text (FileSink); a KafkaSink writes CSV rows with "
              "CsvRowSerializationSchema")

REASONS: dict[str, str] = {
    # pyflink.common
    "pyflink.common.Configuration": _CONFIGURATION,
    "pyflink.common.ConfigOption": _CONFIGURATION,
    "pyflink.common.ConfigOptions": _CONFIGURATION,
    "pyflink.common.TypeSerializer": ("records travel as pickled Python objects, so there are "
                                      "no custom serializers: drop it"),
    "pyflink.common.RestartStrategies": _RESTART,
    "pyflink.common.RestartStrategyConfiguration": _RESTART,
    "pyflink.common.serialization.SerializationSchema": (
        "connectors take formats instead of schemas: KafkaSink(..., value_format='raw', "
        "'text', 'json', 'csv' or 'avro')"),
    "pyflink.common.serialization.DeserializationSchema": (
        "connectors take formats instead of schemas: KafkaSource(..., value_format='raw', "
        "'text', 'json', 'csv' or 'avro')"),
    "pyflink.common.serialization.BulkWriterFactory": _BULK,
    "pyflink.common.watermark_strategy.AssignerWithPeriodicWatermarksWrapper": (
        "legacy assigners are not supported: use WatermarkStrategy.for_bounded_out_of_orderness"
        "(...) or WatermarkStrategy.for_generator(...)"),
    # pyflink.datastream
    "pyflink.datastream.AsyncDataStream": _ASYNC,
    "pyflink.datastream.ExternalizedCheckpointRetention": (
        "completed checkpoints are kept in the storage directory, as many as the DataflowJob's "
        "spec.checkpointing.retained says (docs/streaming.md)"),
    "pyflink.datastream.StateBackend": _STATE_BACKEND,
    "pyflink.datastream.HashMapStateBackend": _STATE_BACKEND,
    "pyflink.datastream.EmbeddedRocksDBStateBackend": _STATE_BACKEND,
    "pyflink.datastream.CustomStateBackend": _STATE_BACKEND,
    "pyflink.datastream.PredefinedOptions": _STATE_BACKEND,
    "pyflink.datastream.CheckpointStorage": _CHECKPOINT_STORAGE,
    "pyflink.datastream.JobManagerCheckpointStorage": (
        "without a storage directory checkpoints stay in the driver's memory, as with this "
        "storage: drop set_checkpoint_storage()"),
    "pyflink.datastream.FileSystemCheckpointStorage": _CHECKPOINT_STORAGE,
    "pyflink.datastream.CustomCheckpointStorage": _CHECKPOINT_STORAGE,
    "pyflink.datastream.SlotSharingGroup": (
        "use env.register_slot_sharing_group(name, cpu, memory) and "
        "stream.slot_sharing_group(name)"),
    "pyflink.datastream.MemorySize": (
        "memory is a Kubernetes quantity such as '1Gi': "
        "env.register_slot_sharing_group(name, cpu, memory)"),
    # pyflink.datastream.functions
    "pyflink.datastream.functions.Partitioner": (
        "partition_custom() is not supported yet: use key_by(), rebalance(), rescale(), "
        "shuffle(), broadcast() or global_()"),
    "pyflink.datastream.functions.SourceFunction": (
        "legacy sources are not supported: use env.from_collection(), from_sequence(), "
        "read_text_file() or from_source() with a FileSource, KafkaSource or "
        "NumberSequenceSource"),
    "pyflink.datastream.functions.SinkFunction": (
        "legacy sinks are not supported: use stream.print(), or stream.sink_to() with a "
        "FileSink or KafkaSink"),
    "pyflink.datastream.functions.AsyncFunction": _ASYNC,
    "pyflink.datastream.functions.AsyncFunctionDescriptor": _ASYNC,
    "pyflink.datastream.functions.AsyncRetryPredicate": _ASYNC,
    "pyflink.datastream.functions.AsyncRetryStrategy": _ASYNC,
    # pyflink.datastream.window
    "pyflink.datastream.window.CountTumblingWindowAssigner": (
        "use key_by(...).count_window(size), or count_window_all(size) without a key"),
    "pyflink.datastream.window.CountSlidingWindowAssigner": (
        "use key_by(...).count_window(size, slide), or count_window_all(size, slide) without "
        "a key"),
    "pyflink.datastream.window.ContinuousProcessingTimeTrigger": (
        "use ContinuousEventTimeTrigger, or a Trigger subclass that registers processing-time "
        "timers"),
    "pyflink.datastream.window.TimeWindowSerializer": _WINDOW_SERIALIZER,
    "pyflink.datastream.window.CountWindowSerializer": _WINDOW_SERIALIZER,
    "pyflink.datastream.window.GlobalWindowSerializer": _WINDOW_SERIALIZER,
    # pyflink.datastream.state
    "pyflink.datastream.state.OperatorStateStore": (
        "operator state is not supported yet: keep state in keyed state (after key_by()) or "
        "in broadcast state"),
    # pyflink.datastream.connectors (names kept for programs of older PyFlink versions)
    "pyflink.datastream.connectors.jdbc.JdbcSink": _JDBC,
    "pyflink.datastream.connectors.jdbc.JdbcConnectionOptions": _JDBC,
    "pyflink.datastream.connectors.jdbc.JdbcExecutionOptions": _JDBC,
    "pyflink.datastream.connectors.dynamic_kafka.DynamicKafkaSource": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.dynamic_kafka.DynamicKafkaSourceBuilder": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.dynamic_kafka.KafkaMetadataService": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.dynamic_kafka.KafkaRecordDeserializationSchema": (
        "KafkaSource takes value_format ('raw', 'text', 'json', 'csv' or 'avro') and key_format "
        "instead of a deserialization schema"),
    "pyflink.datastream.connectors.dynamic_kafka.KafkaStreamSetSubscriber": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.dynamic_kafka.KafkaStreamSubscriber": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.dynamic_kafka.StreamPatternSubscriber": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.dynamic_kafka.SingleClusterTopicMetadataService": _DYNAMIC_KAFKA,
    "pyflink.datastream.connectors.pulsar.PulsarSource": _PULSAR,
    "pyflink.datastream.connectors.pulsar.PulsarSourceBuilder": _PULSAR,
    "pyflink.datastream.connectors.pulsar.StartCursor": _PULSAR,
    "pyflink.datastream.connectors.pulsar.StopCursor": _PULSAR,
    "pyflink.datastream.connectors.rabbitmq.RMQSource": _RABBITMQ,
    "pyflink.datastream.connectors.rabbitmq.RMQSink": _RABBITMQ,
    "pyflink.datastream.connectors.rabbitmq.RMQConnectionConfig": _RABBITMQ,
    # pyflink.datastream.connectors.file_system
    "pyflink.datastream.connectors.file_system.FileCompactor": (
        "FileSink does not compact files: it writes a part file per subtask and checkpoint"),
    "pyflink.datastream.connectors.file_system.FileCompactStrategy": (
        "FileSink does not compact files: it writes a part file per subtask and checkpoint"),
    "pyflink.datastream.connectors.file_system.StreamingFileSink": (
        "use FileSink(path) with stream.sink_to(...)"),
    "pyflink.datastream.connectors.file_system.BulkFormat": (
        "bulk formats are not supported yet: FileSource(*paths) reads text lines"),
    "pyflink.datastream.connectors.file_system.FileEnumeratorProvider": _FILE_LISTING,
    "pyflink.datastream.connectors.file_system.FileSplitAssignerProvider": _FILE_LISTING,
    # pyflink.datastream.connectors.kafka
    "pyflink.datastream.connectors.kafka.FlinkKafkaConsumer": (
        "use KafkaSource(bootstrap_servers, topics=[...], group_id=...) with "
        "env.from_source(...)"),
    "pyflink.datastream.connectors.kafka.FlinkKafkaProducer": (
        "use KafkaSink(bootstrap_servers, topic) with stream.sink_to(...)"),
    "pyflink.datastream.connectors.kafka.Semantic": (
        "use KafkaSink(..., delivery_guarantee=DeliveryGuarantee.EXACTLY_ONCE)"),
    "pyflink.datastream.connectors.kafka.KafkaTopicPartition": (
        "a KafkaSource starts every partition alike: starting_offsets='earliest', 'latest', "
        "'committed' or 'timestamp'"),
    "pyflink.datastream.connectors.kafka.KafkaOffsetResetStrategy": (
        "starting_offsets='committed' starts from the group's committed offsets, else from the "
        "earliest"),
    "pyflink.datastream.connectors.kafka.KafkaTopicSelector": (
        "a KafkaSink writes to the one topic it is given"),
    "pyflink.datastream.connectors.pulsar.RangeGenerator": _PULSAR,
    "pyflink.datastream.connectors.pulsar.PulsarSink": _PULSAR,
    "pyflink.datastream.connectors.pulsar.PulsarSinkBuilder": _PULSAR,
    "pyflink.datastream.connectors.pulsar.MessageDelayer": _PULSAR,
    "pyflink.datastream.connectors.pulsar.TopicRoutingMode": _PULSAR,
    "pyflink.datastream.connectors.cassandra.CassandraSink": _CASSANDRA,
    "pyflink.datastream.connectors.cassandra.ConsistencyLevel": _CASSANDRA,
    "pyflink.datastream.connectors.cassandra.MapperOptions": _CASSANDRA,
    "pyflink.datastream.connectors.cassandra.ClusterBuilder": _CASSANDRA,
    "pyflink.datastream.connectors.cassandra.CassandraCommitter": _CASSANDRA,
    "pyflink.datastream.connectors.cassandra.CassandraFailureHandler": _CASSANDRA,
    "pyflink.datastream.connectors.elasticsearch.FlushBackoffType": _ELASTICSEARCH,
    "pyflink.datastream.connectors.elasticsearch.ElasticsearchEmitter": _ELASTICSEARCH,
    "pyflink.datastream.connectors.elasticsearch.Elasticsearch6SinkBuilder": _ELASTICSEARCH,
    "pyflink.datastream.connectors.elasticsearch.Elasticsearch7SinkBuilder": _ELASTICSEARCH,
    "pyflink.datastream.connectors.elasticsearch.ElasticsearchSink": _ELASTICSEARCH,
    "pyflink.datastream.connectors.kinesis.KinesisShardAssigner": _KINESIS,
    "pyflink.datastream.connectors.kinesis.KinesisDeserializationSchema": _KINESIS,
    "pyflink.datastream.connectors.kinesis.WatermarkTracker": _KINESIS,
    "pyflink.datastream.connectors.kinesis.PartitionKeyGenerator": _KINESIS,
    "pyflink.datastream.connectors.kinesis.FlinkKinesisConsumer": _KINESIS,
    "pyflink.datastream.connectors.kinesis.KinesisStreamsSink": _KINESIS,
    "pyflink.datastream.connectors.kinesis.KinesisStreamsSinkBuilder": _KINESIS,
    "pyflink.datastream.connectors.kinesis.KinesisFirehoseSink": _KINESIS,
    "pyflink.datastream.connectors.kinesis.KinesisFirehoseSinkBuilder": _KINESIS,
    "pyflink.datastream.connectors.hybrid_source.HybridSource": _HYBRID,
    "pyflink.datastream.connectors.hybrid_source.HybridSourceBuilder": _HYBRID,
    "pyflink.datastream.formats.orc.OrcBulkWriters": _BULK,
    "pyflink.datastream.formats.parquet.AvroParquetReaders": _BULK,
    "pyflink.datastream.formats.parquet.AvroParquetWriters": _BULK,
    "pyflink.datastream.formats.parquet.ParquetColumnarRowInputFormat": _BULK,
    "pyflink.datastream.formats.parquet.ParquetBulkWriters": _BULK,
    "pyflink.datastream.connectors.base.StreamTransformer": _PREPROCESSING,
    "pyflink.datastream.connectors.base.SupportsPreprocessing": _PREPROCESSING,
    # pyflink.datastream.formats
    "pyflink.datastream.formats.avro.AvroSchema": _AVRO_FILES,
    "pyflink.datastream.formats.avro.GenericRecordAvroTypeInfo": _AVRO_FILES,
    "pyflink.datastream.formats.avro.AvroInputFormat": _AVRO_FILES,
    "pyflink.datastream.formats.avro.AvroBulkWriters": _AVRO_FILES,
    "pyflink.datastream.formats.csv.CsvSchema": _CSV_READ,
    "pyflink.datastream.formats.csv.CsvSchemaBuilder": _CSV_READ,
    "pyflink.datastream.formats.csv.CsvReaderFormat": _CSV_READ,
    "pyflink.datastream.formats.csv.CsvBulkWriters": _CSV_WRITE,
}
