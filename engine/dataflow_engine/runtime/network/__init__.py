"""Flink's StreamPartitioners: which downstream subtask gets each record."""
