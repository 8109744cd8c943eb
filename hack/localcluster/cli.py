"""Command line of hack/cluster."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from . import build, plane
from .config import Versions, bin_dir


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hack/cluster",
        description="A local Kubernetes control plane (etcd, kube-apiserver, "
        "kube-controller-manager, kube-scheduler, KWOK) on loopback ports.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    build_cmd = commands.add_parser("build", help="build and cache the pinned binaries")
    build_cmd.add_argument("--force", action="store_true", help="rebuild even when cached")
    build_cmd.add_argument("--node", action="store_true",
                           help="also what a real node runs (kubelet, containerd, CoreDNS, ...)")

    up = commands.add_parser("up", help="start a plane; print its admin kubeconfig path last")
    up.add_argument("--nodes", type=int,
                    help="KWOK nodes to register (default 3; 0 with --real-node)")
    up.add_argument("--real-node", action="store_true",
                    help="add a node whose pods really run (kubelet, containerd, CoreDNS); "
                    "needs root, one per machine")
    up.add_argument("--node-cpu", default="16", help="CPU capacity of each node (default 16)")
    up.add_argument("--node-memory", default="64Gi", help="memory of each node (default 64Gi)")
    up.add_argument("--timeout", type=float, default=90.0, help="start-up timeout, seconds")
    up.add_argument("--no-build", action="store_true", help="fail instead of building binaries")
    up.add_argument("--no-image", action="store_true",
                    help="do not load the project's cached image into the real node (saves "
                    "about half a minute where no job's pod runs)")
    up.add_argument("--state-root", type=Path, help="parent of the state dir (default $TMPDIR)")

    down = commands.add_parser("down", help="stop a plane and remove its state")
    down.add_argument("target", nargs="?", help="state dir or kubeconfig (default: the latest)")
    down.add_argument("--all", action="store_true", help="stop every plane started by this user")

    commands.add_parser("list", help="list the planes started by this user")
    commands.add_parser("prune", help="take down the planes none of whose processes run any "
                        "more (a killed `up` or test session)")
    commands.add_parser("bin-dir", help="print the directory of the cached binaries")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            build.build(Versions.load(), force=args.force)
            if args.node:
                build.build_node(Versions.load(), force=args.force)
        elif args.command == "up":
            options = plane.UpOptions(
                nodes=args.nodes,
                node_cpu=args.node_cpu,
                node_memory=args.node_memory,
                timeout=args.timeout,
                build=not args.no_build,
                state_root=args.state_root,
                real_node=args.real_node,
                load_image=not args.no_image,
            )
            print(plane.up(options), flush=True)
        elif args.command == "down":
            targets = plane.registered() if args.all else [plane.resolve(args.target)]
            for state in targets:
                plane.down(state)
        elif args.command == "list":
            for state in plane.registered():
                print(plane.describe(state))
        elif args.command == "prune":
            plane.prune()
        elif args.command == "bin-dir":
            print(bin_dir(Versions.load()))
    except (plane.PlaneError, RuntimeError, OSError, subprocess.CalledProcessError) as error:
        print(f"hack/cluster: {error}", file=sys.stderr)
        return 1
    return 0
