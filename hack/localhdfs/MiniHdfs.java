// hack/hdfs's server: a MiniDFSCluster (one NameNode, one DataNode) under a base directory,
// its NameNode on a given port of loopback; runs until killed.
// Usage: java -cp 'lib/*' MiniHdfs.java BASE_DIR PORT

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class MiniHdfs {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, args[0]);
        // Any client user may write: the tests' drivers run as whoever runs them.
        conf.set("dfs.permissions.enabled", "false");
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
            .nameNodePort(Integer.parseInt(args[1])).numDataNodes(1).build();
        cluster.waitActive();
        System.out.println("HDFS serving at hdfs://127.0.0.1:" + cluster.getNameNodePort());
        Thread.currentThread().join();
    }
}
