"""Flink's network stack: StreamPartitioners (which downstream subtask gets each record) and,
for pipelined jobs, the connections between long-lived subtasks (the wire format, each
subtask's InputGate and ResultPartition)."""
