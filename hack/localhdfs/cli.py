"""Command line of hack/hdfs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from localcluster import javaservers

from . import namenode


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hack/hdfs",
        description="A single-node HDFS (MiniDFSCluster) from its Maven Central artifacts.")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="resolve and cache HDFS's jars (needs mvn)")
    fetch.add_argument("--force", action="store_true", help="fetch again even when cached")
    up = commands.add_parser("up", help="start an HDFS on loopback; print its URI last")
    up.add_argument("--timeout", type=float, default=120.0, help="start-up timeout, seconds")
    up.add_argument("--state-root", type=Path, help="parent of the state dir (default $TMPDIR)")
    down = commands.add_parser("down", help="stop an HDFS and remove its state")
    down.add_argument("target", nargs="?",
                      help="its state dir or URI (default: the latest started)")
    down.add_argument("--all", action="store_true", help="stop every HDFS of this user")
    commands.add_parser("list", help="list running instances: state dir and URI")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "fetch":
            print(namenode.fetch(force=args.force))
        elif args.command == "up":
            started = namenode.up(args.timeout, args.state_root)
            print(f"hdfs in {started.state}", file=sys.stderr)
            print(started.uri)
        elif args.command == "down":
            instances = [(h.state, h.uri) for h in namenode.running()]
            for state in javaservers.down_targets(instances, args.target, args.all):
                killed = namenode.down(state)
                print(f"stopped {state}" + (f" (killed {', '.join(killed)})" if killed else ""))
        else:
            for running in namenode.running():
                print(f"{running.state}\t{running.uri}")
    except (OSError, RuntimeError) as error:
        print(f"hack/hdfs: {error}", file=sys.stderr)
        return 1
    return 0
