"""The ``headrace`` command: manage connectors over gRPC, and run the system on one machine."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import cast

import grpc

from headrace.cli.client import ConfigClient, info_json, status_json
from headrace.core.rpc import split_address
from headrace.core.settings import Settings


def _parse_pairs(pairs: list[str]) -> dict[str, str]:
    config = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--config takes key=value, got {pair!r}")
        config[key.strip()] = value
    return config


def _print(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


def connectors(args: argparse.Namespace, settings: Settings) -> None:
    with ConfigClient(args.address or settings.config_addr) as client:
        if args.action == "list":
            _print(client.names())
        elif args.action == "create":
            config = json.loads(Path(args.file).read_text()) if args.file else {}
            if isinstance(config.get("config"), dict):  # Connect's {"name":…, "config":{…}} body
                config = config["config"]
            config.update(_parse_pairs(args.config or []))
            _print(info_json(client.create(args.name, {k: str(v) for k, v in config.items()})))
        elif args.action == "get":
            _print(info_json(client.get(args.name)))
        elif args.action == "status":
            _print(status_json(client.status(args.name)))
        elif args.action == "delete":
            client.delete(args.name)


def plugins(args: argparse.Namespace, settings: Settings) -> None:
    with ConfigClient(args.address or settings.config_addr) as client:
        _print(
            [
                {
                    "class": p.class_name,
                    "type": p.type,
                    "version": p.version,
                    "aliases": list(p.aliases),
                }
                for p in client.plugins()
            ]
        )


def kafka(args: argparse.Namespace, settings: Settings) -> None:
    from headrace.cli.kafka import EmbeddedKafka

    _, port = split_address(settings.bootstrap_servers)
    broker = EmbeddedKafka(settings.var_dir / "kafka", port=port)
    if args.action == "start":
        broker.start()
        sys.stdout.write(f"kafka ready on {broker.bootstrap}\n")
    else:
        broker.stop()


def coordinator(args: argparse.Namespace, settings: Settings) -> None:
    import asyncio

    from headrace.coordinator.assignmentlog import AssignmentLog
    from headrace.coordinator.history import describe_all
    from headrace.core.topiclog import kafka_logs

    async def read() -> list[object]:
        log = AssignmentLog(kafka_logs(settings, "assignments"))
        await log.start(writer=False, follow=False)
        await log.close()
        return list(describe_all(log.history.latest(args.last)))

    _print(asyncio.run(read()))


def stack(args: argparse.Namespace, settings: Settings) -> None:
    from headrace.cli import demo

    if args.action == "up":
        demo.up(settings, run_demo=args.demo)
    else:
        demo.down(settings)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="headrace", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    conn = sub.add_parser("connectors", help="create, list, get, status and delete connectors")
    conn.add_argument("--address", help="the config service (default HEADRACE_CONFIG_ADDR)")
    conn_sub = conn.add_subparsers(dest="action", required=True)
    conn_sub.add_parser("list")
    create = conn_sub.add_parser("create")
    create.add_argument("name")
    create.add_argument("--config", "-c", action="append", metavar="KEY=VALUE")
    create.add_argument("--file", "-f", help="a JSON file with the config")
    for action in ("get", "status", "delete"):
        conn_sub.add_parser(action).add_argument("name")
    conn.set_defaults(func=connectors)

    plug = sub.add_parser("plugins", help="list installed plugins and their versions")
    plug.add_argument("--address")
    plug.add_argument("action", choices=["list"])
    plug.set_defaults(func=plugins)

    k = sub.add_parser("kafka", help="the embedded single-node Kafka broker")
    k.add_argument("action", choices=["start", "stop"])
    k.set_defaults(func=kafka)

    c = sub.add_parser("coordinator", help="the group's history, from the assignments topic")
    c.add_argument("action", choices=["history"])
    c.add_argument("--last", "-n", type=int, default=10, help="how many generations")
    c.set_defaults(func=coordinator)

    s = sub.add_parser("stack", help="every service on this machine, as separate processes")
    s.add_argument("action", choices=["up", "down"])
    s.add_argument("--demo", action="store_true", help="also run the demo pipeline")
    s.set_defaults(func=stack)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        args.func(args, Settings())
    except grpc.RpcError as exc:
        call = cast(grpc.Call, exc)  # a failed call raises an RpcError that is also its Call
        sys.stderr.write(f"error: {call.code().name}: {call.details()}\n")
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
