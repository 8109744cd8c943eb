"""Where a driver's REST endpoints are, and how a caller proves itself to them.

The driver serves them on its status port (``dataflow run --status-port``; the ``status`` port
of the driver's Service): reading needs nothing, a POST needs the job's token in
:data:`TOKEN_HEADER` when the driver has one. The operator gives the driver that token in the
environment variable :data:`TOKEN_ENV` (an argument would show in the process list), where
``dataflow run`` and ``dataflow savepoint`` read it too.
"""

from __future__ import annotations

#: ``GET``: the status document (:class:`~dataflow_engine.rest.status.DriverStatusDocument`).
STATUS_PATH = "/status"
#: ``GET``: ``ok`` while the driver's server runs (text, not a message).
HEALTH_PATH = "/healthz"
#: ``POST``: a :class:`~dataflow_engine.rest.savepoints.SavepointTriggerRequest`, answered by
#: a :class:`~dataflow_engine.rest.savepoints.SavepointTriggerResponse` (202), or an
#: :class:`~dataflow_engine.rest.messages.ErrorResponse` (400: not a request, 403: no or a
#: wrong token, 409: the job takes no savepoint now).
SAVEPOINTS_PATH = "/savepoints"
#: ``POST``: a :class:`~dataflow_engine.rest.savepoints.SavepointDisposeRequest`, answered by
#: a :class:`~dataflow_engine.rest.savepoints.SavepointDisposeResponse` (200), or an
#: :class:`~dataflow_engine.rest.messages.ErrorResponse` (400: not a request, or a path that
#: is not one of the job's savepoints; 403: no or a wrong token; 409: the driver has no
#: savepoint storage now, or the deletion failed).
SAVEPOINTS_DISPOSE_PATH = "/savepoints/dispose"

#: The header a POST's caller proves itself with, when the driver has a token.
TOKEN_HEADER = "X-Dataflow-Token"
#: The environment variable the driver (and ``dataflow savepoint``) read the token from.
TOKEN_ENV = "DATAFLOW_STATUS_TOKEN"

# What the operator gives a driver besides its job file.
#: Where the driver reads the values of the job's Secret references: ``<dir>/<name>/<key>``.
SECRETS_DIR_ENV = "DATAFLOW_SECRETS_DIR"
#: Where a driver pod mounts the job's Secrets.
DEFAULT_SECRETS_DIR = "/etc/dataflow-secrets"
#: A class-data-sharing archive of Spark's classes for the driver's JVM to map, when readable
#: (docker/class-archive.sh): the image sets it, a local operator passes its own on.
CLASS_ARCHIVE_ENV = "DATAFLOW_CLASS_ARCHIVE"
#: Spark configuration that gives each slot sharing group executors of its own shape (the
#: Kubernetes backend sets it; spark-submit drops settings whose names do not start "spark.").
RESOURCE_PROFILES_KEY = "spark.dataflow.resourceProfiles.enabled"
