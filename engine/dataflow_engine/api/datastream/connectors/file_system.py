"""PyFlink's ``pyflink.datastream.connectors.file_system``: the file source (the spec's
``text`` operator) and sink (its ``file`` operator), with PyFlink's builders, part-file names
and buckets; compaction, bulk formats and custom enumerators are refused."""

from __future__ import annotations

import os
from typing import Any

from dataflow_engine.api._unsupported import NotSupportedError, message, refused
from dataflow_engine.api.common.time import Duration
from dataflow_engine.api.datastream.connectors.base import Source
from dataflow_engine.api.sinks import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)


class FileSource(Source):
    """Flink's FileSource of text lines (``forRecordStreamFormat`` with a TextLineInputFormat)
    over files, directories or globs, with keyword arguments rather than a builder (the spec's
    ``text`` operator). ``monitor_interval`` is ``monitorContinuously``'s: the source looks for
    new files that often, reads each once and never ends; without it, it reads the files there
    when the job starts and ends."""

    def __init__(self, *paths: str | os.PathLike[str],
                 monitor_interval: Duration | None = None) -> None:
        if not paths:
            raise ValueError("FileSource needs at least one path")
        if monitor_interval is not None and monitor_interval.millis <= 0:
            raise ValueError(f"monitor_interval must be positive, not {monitor_interval}")
        self.paths = [os.fspath(path) for path in paths]
        self.monitor_interval = monitor_interval

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str | os.PathLike[str]
                                 ) -> FileSourceBuilder:
        """PyFlink's way to make one: ``.process_static_file_set()`` or
        ``.monitor_continuously(interval)``, then ``.build()``."""
        if not isinstance(stream_format, StreamFormat):
            raise TypeError("for_record_stream_format() takes StreamFormat.text_line_format(), "
                            f"not {type(stream_format).__name__}")
        return FileSourceBuilder(paths)

    def spec_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"path": self.paths[0] if len(self.paths) == 1 else self.paths}
        if self.monitor_interval is not None:
            args["monitorInterval"] = f"{self.monitor_interval.millis}ms"
        return args


class StreamFormat:
    """How a FileSource reads its files: text lines (Flink's TextLineInputFormat)."""

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        if charset_name.replace("-", "").upper() != "UTF8":
            raise ValueError(f"the FileSource reads UTF-8 text, not {charset_name!r}")
        return StreamFormat()


class FileSourceBuilder:
    """``FileSource.for_record_stream_format(StreamFormat.text_line_format(), *paths)``."""

    def __init__(self, paths: tuple[str | os.PathLike[str], ...]) -> None:
        self._paths = paths
        self._monitor_interval: Duration | None = None

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        """Looks for new files this often; the source never ends."""
        self._monitor_interval = discovery_interval
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Reads the files there when the job starts, then ends (the default)."""
        self._monitor_interval = None
        return self

    def set_file_enumerator(self, file_enumerator: object) -> FileSourceBuilder:
        raise NotSupportedError(message(
            "pyflink.datastream.connectors.file_system.FileEnumeratorProvider"))

    def set_split_assigner(self, split_assigner: object) -> FileSourceBuilder:
        raise NotSupportedError(message(
            "pyflink.datastream.connectors.file_system.FileSplitAssignerProvider"))

    def build(self) -> FileSource:
        return FileSource(*self._paths, monitor_interval=self._monitor_interval)



FileCompactor = refused("pyflink.datastream.connectors.file_system.FileCompactor")
FileCompactStrategy = refused("pyflink.datastream.connectors.file_system.FileCompactStrategy")
StreamingFileSink = refused("pyflink.datastream.connectors.file_system.StreamingFileSink")
BulkFormat = refused("pyflink.datastream.connectors.file_system.BulkFormat")
FileEnumeratorProvider = refused(
    "pyflink.datastream.connectors.file_system.FileEnumeratorProvider")
FileSplitAssignerProvider = refused(
    "pyflink.datastream.connectors.file_system.FileSplitAssignerProvider")

__all__ = ["BucketAssigner", "BulkFormat", "FileCompactStrategy", "FileCompactor",
           "FileEnumeratorProvider", "FileSink", "FileSource", "FileSourceBuilder",
           "FileSplitAssignerProvider", "OutputFileConfig", "RollingPolicy", "StreamFormat",
           "StreamingFileSink"]
