"""Spark as the cluster: the physical plan of RDDs and stages, running it, the ExecutionVertex
states read from Spark, executor shapes per slot sharing group.
"""
