"""hack/hdfs: a single-node HDFS (Hadoop's MiniDFSCluster: a NameNode and a DataNode in one JVM)
for the tests of checkpoints on a Hadoop filesystem, run from its Maven Central artifacts with
the machine's Java."""
