"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and KWOK, built from Go modules and started by `hack/cluster up`."""
