"""The filesystems checkpoints and savepoints are written to (Flink's FileSystem of a
checkpoint storage URI).

A path or ``file:`` URI is a local directory (on Kubernetes, a mounted volume). Any other
``scheme://`` URI goes through Hadoop's FileSystem in the driver's JVM, so every filesystem
Spark's Hadoop classpath has a connector for (``hdfs://`` always; ``s3a://``, ``gs://``,
``abfs://`` with their connectors and ``spark.hadoop.*`` settings) holds checkpoints without
a mounted volume. Only the driver reads and writes checkpoints.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from typing import Any, Protocol
from urllib.parse import urlsplit

from dataflow_engine.spec.model import is_local_storage


class CheckpointFileSystem(Protocol):
    def names(self, directory: str) -> list[str]:
        """The entries of ``directory`` (none when it does not exist)."""

    def is_file(self, path: str) -> bool: ...

    def is_directory(self, path: str) -> bool: ...

    def write_atomically(self, path: str, data: bytes) -> None:
        """``data`` at ``path`` (parents created): the whole file or none of it."""

    def read(self, path: str) -> bytes:
        """Raises FileNotFoundError when ``path`` does not exist, OSError otherwise."""

    def remove_tree(self, path: str) -> None:
        """Removes ``path`` and everything under it; errors are ignored (retention)."""


def resolve(uri: str) -> tuple[CheckpointFileSystem, str]:
    """The filesystem of a storage setting and the directory on it."""
    if is_local_storage(uri):
        if uri.startswith("file:"):
            uri = "/" + uri.removeprefix("file:").lstrip("/")
        return LOCAL, os.path.abspath(uri)
    directory = uri.rstrip("/")
    if not urlsplit(directory).path:  # the filesystem's root
        directory += "/"
    return HadoopFileSystem.of_active_spark_context(directory), directory


#: Checkpoint and savepoint files are readable by the driver's user alone.
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700


class LocalFileSystem:
    def names(self, directory: str) -> list[str]:
        try:
            return os.listdir(directory)
        except FileNotFoundError:
            return []

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def is_directory(self, path: str) -> bool:
        return os.path.isdir(path)

    def write_atomically(self, path: str, data: bytes) -> None:
        """Written under a temporary name, synced, renamed, the directory synced. Only the
        writer's user may read it (PRIVATE_FILE_MODE): state and settings are the job's."""
        directory = os.path.dirname(path)
        os.makedirs(directory, mode=PRIVATE_DIRECTORY_MODE, exist_ok=True)
        temporary = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}."
                                            f"{time.time_ns()}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        with open(descriptor, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
        with contextlib.suppress(OSError):
            descriptor = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)


LOCAL = LocalFileSystem()


class HadoopFileSystem:
    """A Hadoop FileSystem of the driver's JVM, reached through Py4J; its Java exceptions
    become OSErrors with the Java message."""

    def __init__(self, jvm: Any, configuration: Any, uri: str) -> None:
        self._jvm = jvm
        try:
            self._fs = jvm.org.apache.hadoop.fs.Path(uri).getFileSystem(configuration)
        except Exception as error:
            raise OSError(f"no filesystem for {uri}: {_java_message(error)}") from None

    @classmethod
    def of_active_spark_context(cls, uri: str) -> HadoopFileSystem:
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is None:
            raise OSError(f"{uri} needs the driver's SparkContext (Hadoop's filesystems)")
        return cls(context._jvm, context._jsc.hadoopConfiguration(), uri)

    def _path(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def _call(self, what: str, path: str, call: Any) -> Any:
        try:
            return call()
        except Exception as error:
            message = _java_message(error)
            if "FileNotFoundException" in message:
                raise FileNotFoundError(f"{path} does not exist") from None
            raise OSError(f"{what} {path}: {message}") from None

    def names(self, directory: str) -> list[str]:
        try:
            statuses = self._call("list", directory,
                                  lambda: self._fs.listStatus(self._path(directory)))
        except FileNotFoundError:
            return []
        return [str(status.getPath().getName()) for status in statuses]

    def is_file(self, path: str) -> bool:
        return bool(self._call("stat", path, lambda: self._fs.isFile(self._path(path))))

    def is_directory(self, path: str) -> bool:
        return bool(self._call("stat", path, lambda: self._fs.isDirectory(self._path(path))))

    def write_atomically(self, path: str, data: bytes) -> None:
        """Written under a temporary name and renamed: HDFS renames atomically; an object
        store's rename copies a complete object, so a reader still sees all or nothing.
        Hadoop's rename does not replace, so a file written again (a checkpoint stored once
        more as a stop's savepoint) is deleted first: a crash in between leaves that
        checkpoint unreadable, and a restore takes the one before it."""
        target = self._path(path)
        temporary = self._path(f"{target.getParent()}/.{target.getName()}.{time.time_ns()}")

        def write() -> None:
            stream = self._fs.create(temporary, True)
            try:
                self._fs.setPermission(temporary, self._jvm.org.apache.hadoop.fs.permission
                                       .FsPermission(f"{PRIVATE_FILE_MODE:o}"))
                stream.write(bytearray(data))
            finally:
                stream.close()
            if self._fs.exists(target):
                self._fs.delete(target, False)
            if not self._fs.rename(temporary, target):
                self._fs.delete(temporary, False)
                raise OSError(f"cannot rename {temporary} to {path}")

        self._call("write", path, write)

    def read(self, path: str) -> bytes:
        def read() -> bytes:
            stream = self._fs.open(self._path(path))
            try:
                return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()

        return self._call("read", path, read)  # type: ignore[no-any-return]

    def remove_tree(self, path: str) -> None:
        with contextlib.suppress(OSError):
            self._call("delete", path, lambda: self._fs.delete(self._path(path), True))


def _java_message(error: Exception) -> str:
    java = getattr(error, "java_exception", None)
    return str(java.toString()) if java is not None else str(error)
