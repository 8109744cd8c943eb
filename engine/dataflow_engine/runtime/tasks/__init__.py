"""Flink's task layer: a StreamTask runs one subtask, its OperatorChain and the Outputs between
chained operators, from picklable descriptors.
"""
