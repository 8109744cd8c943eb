"""The operator's ``dataflow`` subcommands: ``crd``, ``operator`` and ``status``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any

from dataflow_engine.compiler.policy import DEFAULT_DENIED_MODULES, STRICT, JobPolicy
from dataflow_operator.settings import (
    PROTECTED_NAMESPACES,
    BackendKind,
    LeaderElection,
    OperatorSettings,
    default_state_dir,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Entry point of the ``dataflow.commands`` group."""
    crd = commands.add_parser("crd", help="print a CRD (generated from the model)")
    crd.add_argument("--kind", choices=("DataflowJob", "DataflowSnapshot"),
                     default="DataflowJob", help="which resource's (default: DataflowJob)")
    crd.set_defaults(handler=_crd)
    job_policy = commands.add_parser(
        "job-policy", help="print what the chart's admission policies check jobs against "
        "(helm/dataflow-operator/files/job-policy.json, generated from the job policy)")
    job_policy.set_defaults(handler=_job_policy)

    operator = commands.add_parser(
        "operator", help="run the DataflowJob controller",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Watch DataflowJobs and run them on Spark, in a pod or from a kubeconfig.")
    operator.add_argument("--backend", choices=[b.value for b in BackendKind],
                          default=BackendKind.KUBERNETES.value,
                          help="where drivers run: Spark-on-Kubernetes pods, or local processes "
                               "on embedded Spark")
    scope = operator.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", dest="namespaces", default=[],
                       help="namespace to watch (repeatable)")
    scope.add_argument("-A", "--all-namespaces", action="store_true",
                       help="watch every namespace but the excluded ones (the default without "
                            "--namespace)")
    operator.add_argument("--exclude-namespace", action="append", dest="excluded_namespaces",
                          default=[], metavar="NAMESPACE",
                          help="a namespace whose jobs are never run, besides kube-system, "
                               "kube-public and kube-node-lease (repeatable; the chart names "
                               "the operator's own)")
    operator.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, then "
                                               "$KUBECONFIG)")
    operator.add_argument("--image", default=OperatorSettings.image,
                          help="default image of drivers and executors")
    operator.add_argument("--jvm-options", default=OperatorSettings.jvm_options, metavar="OPTIONS",
                          help="JVM options of every job's driver and executors (give it as "
                               "--jvm-options=..., as options begin with a dash), e.g. "
                               "-XX:TieredStopAtLevel=1 where jobs are short and cores few; a "
                               "job's own spark.executor.extraJavaOptions follow them")
    operator.add_argument("--state-dir", type=Path, default=default_state_dir(),
                          help="local backend: where driver files and logs live")
    operator.add_argument("--status-key-file", type=Path, default=None, metavar="PATH",
                          help="the key the drivers' status tokens are derived from (the "
                               "chart mounts a Secret); default: one kept in --state-dir")
    operator.add_argument("--local-master", default=OperatorSettings.local_master,
                          help="local backend: the embedded Spark master")
    operator.add_argument("--max-local-drivers", type=int,
                          default=OperatorSettings.max_local_drivers,
                          help="local backend: drivers running at once; more jobs are Queued")
    operator.add_argument("--local-driver-user", default=OperatorSettings.local_driver_user,
                          metavar="NAME|UID",
                          help="local backend, when the operator runs as root: the unprivileged "
                               "user drivers run as (it must exist); otherwise drivers run as "
                               "the operator's user")
    operator.add_argument("--poll-interval", type=float, default=OperatorSettings.poll_interval,
                          help="seconds between two looks at each running job's driver")
    operator.add_argument("--savepoint-timeout", type=float,
                          default=OperatorSettings.savepoint_timeout,
                          help="seconds a driver has to take a savepoint it was asked for; "
                               "then the savepoint counts as failed")
    operator.add_argument("--health-port", type=int, default=OperatorSettings.health_port,
                          help="liveness endpoint port (/healthz); 0 disables it")
    operator.add_argument("--metrics-port", type=int, default=OperatorSettings.metrics_port,
                          help="Prometheus endpoint port (/metrics); 0 disables it")
    operator.add_argument("--allow-image", action="append", dest="allowed_images", default=[],
                          metavar="PREFIX",
                          help="an image prefix jobs may name in spec.image (repeatable; "
                               "default: none, every job runs --image)")
    operator.add_argument("--allow-control-plane", action="store_true",
                          help="let jobs tolerate every taint and choose control-plane nodes")
    operator.add_argument("--allow-service-account", action="append", default=[],
                          dest="allowed_service_accounts", metavar="NAME",
                          help="a service account jobs may run as, by spec.serviceAccountName "
                               "(repeatable; default: none, each job gets its own)")
    operator.add_argument("--denied-modules", metavar="LIST",
                          default=",".join(sorted(DEFAULT_DENIED_MODULES)),
                          help="modules whose functions jobs may not reference (comma-separated)")
    operator.add_argument("--max-operators", type=int, default=STRICT.max_operators,
                          help="operators one job may have")
    operator.add_argument("--max-execution-vertices", type=int,
                          default=STRICT.max_execution_vertices,
                          help="ExecutionVertices (subtasks) one job may have")
    operator.add_argument("--max-spec-bytes", type=int, default=STRICT.max_spec_bytes,
                          help="size of one job's spec, as JSON")
    operator.add_argument("--leader-election", action="store_true",
                          help="run as one of several replicas: only the holder of a Lease "
                               "acts, the others wait to take over")
    operator.add_argument("--leader-election-namespace",
                          default=os.environ.get("POD_NAMESPACE") or "default",
                          help="namespace of the Lease (default: $POD_NAMESPACE, else default)")
    operator.add_argument("--leader-election-id", default=LeaderElection.name,
                          help="name of the Lease")
    operator.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    operator.set_defaults(handler=_operator)

    status = commands.add_parser("status", help="show a DataflowJob's per-vertex status",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    status.add_argument("name", help="the DataflowJob")
    status.add_argument("-n", "--namespace", default="default", help="its namespace")
    status.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG)")
    status.set_defaults(handler=_status)


def _crd(args: argparse.Namespace) -> int:
    from dataflow_operator.crd import crd_yaml

    print(crd_yaml(args.kind), end="")
    return 0


def _job_policy(args: argparse.Namespace) -> int:
    from dataflow_operator.admission import job_policy_json

    print(job_policy_json(), end="")
    return 0


def _operator(args: argparse.Namespace) -> int:
    excluded = PROTECTED_NAMESPACES | frozenset(args.excluded_namespaces)
    refused = sorted(excluded.intersection(args.namespaces))
    if refused:
        print(f"dataflow operator: --namespace {', '.join(refused)}: jobs never run in "
              "kube-system, kube-public, kube-node-lease or an excluded namespace (the "
              "operator's own)", file=sys.stderr)
        return 2
    settings = OperatorSettings(
        backend=BackendKind(args.backend), namespaces=tuple(args.namespaces),
        excluded_namespaces=excluded,
        kubeconfig=args.kubeconfig, image=args.image, jvm_options=args.jvm_options,
        state_dir=args.state_dir,
        status_key_file=args.status_key_file,
        local_master=args.local_master, max_local_drivers=args.max_local_drivers,
        local_driver_user=args.local_driver_user,
        poll_interval=args.poll_interval, savepoint_timeout=args.savepoint_timeout,
        health_port=args.health_port or None, metrics_port=args.metrics_port or None,
        policy=JobPolicy(
            denied_modules=frozenset(m.strip() for m in args.denied_modules.split(",")
                                     if m.strip()),
            allowed_images=tuple(args.allowed_images),
            allowed_service_accounts=frozenset(args.allowed_service_accounts),
            allow_control_plane=args.allow_control_plane,
            max_operators=args.max_operators,
            max_execution_vertices=args.max_execution_vertices,
            max_spec_bytes=args.max_spec_bytes),
        leader_election=LeaderElection(namespace=args.leader_election_namespace,
                                       name=args.leader_election_id)
        if args.leader_election else None)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from dataflow_operator.backends.local import DriverUserError
    from dataflow_operator.main import LeadershipLost, run_operator

    try:
        asyncio.run(run_operator(settings))
    except LeadershipLost as exc:
        logging.getLogger("dataflow_operator").error("%s; exiting to start over", exc)
        return 1
    except DriverUserError as exc:
        logging.getLogger("dataflow_operator").error("%s", exc)
        return 1
    return 0


def _status(args: argparse.Namespace) -> int:
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
    from dataflow_operator.kube import Kube, load_config
    from dataflow_operator.status.view import render_status

    kube = Kube(load_config(args.kubeconfig))
    job: dict[str, Any] | None = kube.get("DataflowJob", args.namespace, args.name)
    if job is None:
        print(f"error: DataflowJob {args.namespace}/{args.name} not found")
        return 1
    print(render_status(job))
    return 0
