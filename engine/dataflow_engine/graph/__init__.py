"""Flink's graph layers: StreamGraph -> JobGraph -> ExecutionGraph -> physical plan."""
