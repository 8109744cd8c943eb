"""Command line of hack/kafka."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from localcluster import javaservers

from . import artifacts, broker, topics


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
    topic = commands.add_parser("topic", help="create and list topics (the broker creates "
                                "none by itself)")
    topic_commands = topic.add_subparsers(dest="topic_command", required=True)
    create = topic_commands.add_parser("create", help="create a topic")
    create.add_argument("name", help="the topic's name")
    create.add_argument("--partitions", type=_positive, required=True, metavar="N",
                        help="its partitions (one replica each: the broker is one node)")
    listing = topic_commands.add_parser("list", help="list topics and their partition counts")
    listing.add_argument("--internal", action="store_true",
                         help="Kafka's own topics (__consumer_offsets...) too")
    for command in (create, listing):
        command.add_argument("--bootstrap", metavar="SERVERS",
                             help="the broker's bootstrap servers (default: the latest started "
                                  "broker of hack/kafka up)")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _bootstrap(given: str | None) -> str:
    """The bootstrap servers a topic command means: the given ones, or those of the broker
    ``down`` would stop (the latest started)."""
    if given:
        return given
    brokers = broker.running()
    if not brokers:
        raise RuntimeError("no broker is running: start one (hack/kafka up) or name one "
                           "(--bootstrap)")
    state = javaservers.down_targets([(b.state, b.bootstrap) for b in brokers], None, False)[0]
    return next(b.bootstrap for b in brokers if b.state == state)


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
        elif args.command == "topic":
            topics.require_client(sys.argv[1:] if argv is None else argv)
            bootstrap = _bootstrap(args.bootstrap)
            if args.topic_command == "create":
                topics.create(bootstrap, args.name, args.partitions)
                print(f"created topic {args.name} ({args.partitions} partitions) on {bootstrap}")
            else:
                for name, count in topics.partitions(bootstrap, args.internal).items():
                    print(f"{name}\t{count}")
        else:
            for running in broker.running():
                print(f"{running.state}\t{running.bootstrap}")
    except (OSError, RuntimeError) as error:
        print(f"hack/kafka: {error}", file=sys.stderr)
        return 1
    return 0
