"""Flink's network layer: RecordWriters, StreamPartitioners and key groups decide which downstream
subtask gets each record.
"""
