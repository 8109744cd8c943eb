"""Command line of hack/kafka."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from localcluster import javaservers

from . import artifacts, broker


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hack/kafka",
        description="A single-node Apache Kafka broker (KRaft) from its Maven Central artifacts.")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="resolve and cache the broker's jars (needs mvn)")
    fetch.add_argument("--force", action="store_true", help="fetch again even when cached")
    up = commands.add_parser("up", help="start a broker; print its bootstrap servers last")
    up.add_argument("--host", default="127.0.0.1",
                    help="address to listen on and advertise (default 127.0.0.1)")
    up.add_argument("--timeout", type=float, default=60.0, help="start-up timeout, seconds")
    up.add_argument("--state-root", type=Path, help="parent of the state dir (default $TMPDIR)")
    down = commands.add_parser("down", help="stop a broker and remove its state")
    down.add_argument("target", nargs="?",
                      help="its state dir or bootstrap servers (default: the latest started)")
    down.add_argument("--all", action="store_true", help="stop every broker of this user")
    commands.add_parser("list", help="list running brokers: state dir and bootstrap servers")
    sasl = commands.add_parser("sasl", help="print a broker's SASL_PLAINTEXT listener as JSON: "
                               "bootstrap, username, passwordFile (mechanism PLAIN)")
    sasl.add_argument("target", nargs="?",
                      help="its state dir or bootstrap servers (default: the latest started)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "fetch":
            print(artifacts.fetch(force=args.force))
        elif args.command == "up":
            started = broker.up(args.host, args.timeout, args.state_root)
            print(f"kafka {artifacts.kafka_version()} in {started.state}", file=sys.stderr)
            print(started.bootstrap)
        elif args.command == "down":
            brokers = [(b.state, b.bootstrap) for b in broker.running()]
            for state in javaservers.down_targets(brokers, args.target, args.all):
                killed = broker.down(state)
                print(f"stopped {state}" + (f" (killed {', '.join(killed)})" if killed else ""))
        elif args.command == "sasl":
            brokers = [(b.state, b.bootstrap) for b in broker.running()]
            state = javaservers.down_targets(brokers, args.target, False)[0]
            print(json.dumps(broker.sasl_listener(state)))
        else:
            for running in broker.running():
                print(f"{running.state}\t{running.bootstrap}")
    except (OSError, RuntimeError) as error:
        print(f"hack/kafka: {error}", file=sys.stderr)
        return 1
    return 0
