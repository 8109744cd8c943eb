"""What a task is made of below its operators: picklable descriptors, the Outputs inside a chain
and the RecordWriters feeding the network, operator fusion, and user-code failures.
"""
