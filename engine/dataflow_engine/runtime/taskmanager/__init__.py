"""Running one subtask on an executor: the StreamTask and its OperatorChain.

They sit above the stream operators they create, which sit above the task's parts (tasks/).
"""
