"""The contract between the operator and a running driver (as Flink's ``runtime/rest``
messages): the requests the operator sends, the answers and the status document the driver
serves, where they are served and how a caller proves itself.

Both sides import these models, so the shape of every message is defined once: the driver
builds and serialises them, the operator parses them with the tolerant ``parse_*`` functions
(None for a message of another protocol version, or a malformed one, rather than an error).
The package imports nothing of ``dataflow_engine.runtime`` (the operator must not need the
Spark runtime to talk to a driver) and of the rest of the engine only the states the
documents carry and, for type checking, the compiled job an upgrade is for.
"""

from dataflow_engine.rest.endpoints import (
    CLASS_ARCHIVE_ENV,
    DEFAULT_SECRETS_DIR,
    HEALTH_PATH,
    RESOURCE_PROFILES_KEY,
    SAVEPOINTS_DISPOSE_PATH,
    SAVEPOINTS_PATH,
    SECRETS_DIR_ENV,
    STATUS_PATH,
    TOKEN_ENV,
    TOKEN_HEADER,
)
from dataflow_engine.rest.messages import PROTOCOL_VERSION, ErrorResponse, parse_message
from dataflow_engine.rest.savepoints import (
    SavepointDisposeRequest,
    SavepointDisposeResponse,
    SavepointEntry,
    SavepointFailureReason,
    SavepointTriggerRequest,
    SavepointTriggerResponse,
    SnapshotKind,
    UpgradeTarget,
    UpgradeVertex,
    parse_dispose_response,
    parse_savepoint_response,
    upgrade_target,
)
from dataflow_engine.rest.status import (
    SAVEPOINT_HISTORY,
    CheckpointStatistics,
    CompletedCheckpointInfo,
    DriverStatusDocument,
    FailureInfo,
    KafkaPartitionInfo,
    OperatorInfo,
    SubtaskInfo,
    VertexInfo,
    aggregate_state,
    parse_status,
)

__all__ = [
    "CLASS_ARCHIVE_ENV",
    "DEFAULT_SECRETS_DIR",
    "HEALTH_PATH",
    "PROTOCOL_VERSION",
    "RESOURCE_PROFILES_KEY",
    "SAVEPOINTS_DISPOSE_PATH",
    "SAVEPOINTS_PATH",
    "SAVEPOINT_HISTORY",
    "SECRETS_DIR_ENV",
    "STATUS_PATH",
    "TOKEN_ENV",
    "TOKEN_HEADER",
    "CheckpointStatistics",
    "CompletedCheckpointInfo",
    "DriverStatusDocument",
    "ErrorResponse",
    "FailureInfo",
    "KafkaPartitionInfo",
    "OperatorInfo",
    "SavepointDisposeRequest",
    "SavepointDisposeResponse",
    "SavepointEntry",
    "SavepointFailureReason",
    "SavepointTriggerRequest",
    "SavepointTriggerResponse",
    "SnapshotKind",
    "SubtaskInfo",
    "UpgradeTarget",
    "UpgradeVertex",
    "VertexInfo",
    "aggregate_state",
    "parse_dispose_response",
    "parse_message",
    "parse_savepoint_response",
    "parse_status",
    "upgrade_target",
]
