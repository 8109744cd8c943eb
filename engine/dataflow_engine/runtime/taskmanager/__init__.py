"""Running subtasks on an executor: the StreamTask and its OperatorChain, and for pipelined
jobs the long-lived task, its barrier alignment and the slot that hosts it.

They sit above the stream operators they create, which sit above the task's parts (tasks/).
"""
