package io.dataflow.spark;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.apache.spark.deploy.k8s.features.KubernetesExecutorCustomFeatureConfigStep;

/**
 * Gives each executor pod the exact shape of its slot sharing group.
 *
 * <p>Spark counts a ResourceProfile's CPUs in whole cores and has one global
 * {@code spark.kubernetes.executor.request.cores}, so executors of several groups cannot request
 * fractional CPUs of their own. The operator compiles each group's executor shape (cpu and
 * memory of {@code slotsPerExecutor} slots); the runner names, per ResourceProfile id, the group
 * and that shape in {@code spark.dataflow.executor.profile.<id>.*}; this step, run by the
 * driver as the last step that builds an executor pod, sets the container's requests (and the
 * memory limit) to that shape and labels the pod with its group.
 */
public final class SlotSharingGroupFeatureStep implements KubernetesExecutorCustomFeatureConfigStep {
  static final String PREFIX = "spark.dataflow.executor.profile.";
  static final String GROUP_LABEL = "dataflow.io/slot-sharing-group";

  private String group;
  private String cpu;
  private String memory;

  @Override
  public void init(KubernetesExecutorConf conf) {
    SparkConf spark = conf.sparkConf();
    String prefix = PREFIX + conf.resourceProfileId() + ".";
    group = spark.get(prefix + "group", null);
    cpu = spark.get(prefix + "cpu", null);
    memory = spark.get(prefix + "memory", null);
  }

  @Override
  public SparkPod configurePod(SparkPod pod) {
    if (group == null || cpu == null || memory == null) {
      return pod; // a profile the runner did not describe: Spark's own sizing stands
    }
    Pod labelled = new PodBuilder(pod.pod())
        .editOrNewMetadata().addToLabels(GROUP_LABEL, group).endMetadata()
        .build();
    Container sized = new ContainerBuilder(pod.container())
        .editOrNewResources()
        .addToRequests("cpu", new Quantity(cpu))
        .addToRequests("memory", new Quantity(memory))
        .addToLimits("memory", new Quantity(memory))
        .endResources()
        .build();
    return new SparkPod(labelled, sized);
  }
}
