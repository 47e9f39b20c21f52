"""``headrace migrate``: move connectors between a Kafka Connect cluster and headrace, with their
source offsets and sink positions.

    headrace migrate --from http://connect:8083 [--connector NAME ...] --plan
                     [--worker-properties connect-distributed.properties]
    headrace migrate --from http://connect:8083 [--connector NAME ...] --cutover [--keep]
    headrace migrate --to http://connect:8083 ...            (and back)

headrace's side is the REST API at ``HEADRACE_REST_ADDR``, with the process's TLS and token
(``headrace.core.settings``); Kafka Connect's is reached with the ``--connect-*`` options.
Exit codes: 0 done (or planned), 1 a connector could not move, 2 bad arguments or settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from headrace.clients.connect import RestError, Side
from headrace.core.model.properties import parse_properties
from headrace.core.security import tls
from headrace.core.security.tls import SecurityError
from headrace.core.settings import Settings, settings_or_exit
from headrace.migration.cutover import WAIT_S, MoveError
from headrace.migration.moving import (
    FROM,
    HEADRACE,
    TO,
    Access,
    BadRequest,
    Listener,
    Request,
    by_connector,
    migrate,
)
from headrace.migration.plan import Move, move_json, offsets_summary


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="headrace migrate",
        description="Move connectors between Kafka Connect and headrace with their offsets.",
    )
    way = parser.add_mutually_exclusive_group(required=True)
    way.add_argument("--from", dest="from_url", metavar="URL", help="Kafka Connect to move from")
    way.add_argument("--to", dest="to_url", metavar="URL", help="Kafka Connect to move to")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--plan", action="store_true", help="show what would move; change nothing")
    what.add_argument("--cutover", action="store_true", help="move each connector in turn")
    parser.add_argument(
        "--connector", action="append", default=[], metavar="NAME", help="only these (repeatable)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="[CONNECTOR:]KEY=VALUE",
        help="a value the side it comes from hides; VALUE @path reads it from a file",
    )
    parser.add_argument(
        "--worker-properties",
        metavar="FILE",
        help="Kafka Connect's worker properties (with --from): the converters it gives "
        "connectors that name none",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep each connector STOPPED where it came from"
    )
    parser.add_argument(
        "--install",
        action="store_true",
        help="with --from: first install, for the whole cluster, each plugin headrace lacks "
        "whose Maven coordinate the plan names",
    )
    parser.add_argument(
        "--timeout", type=float, default=WAIT_S, help="seconds to wait for each state change"
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    connect = parser.add_argument_group("reaching Kafka Connect (VALUE @path reads a file)")
    connect.add_argument("--connect-user", default="", metavar="USER", help="basic auth's user")
    connect.add_argument("--connect-password", default="", metavar="VALUE", help="its password")
    connect.add_argument("--connect-token", default="", metavar="VALUE", help="a bearer token")
    connect.add_argument("--connect-ca", metavar="FILE", help="the CA its certificate is from")
    connect.add_argument("--connect-cert", metavar="FILE", help="a client certificate (PEM)")
    connect.add_argument("--connect-key", metavar="FILE", help="the client certificate's key")
    return parser.parse_args(argv)


def supplied_values(sets: Sequence[str]) -> dict[str | None, dict[str, str]]:
    """``--set`` values by connector (None: for every connector); ValueError, naming the entry
    but never its value, for one that is not ``[CONNECTOR:]KEY=VALUE``."""
    found: dict[str, str] = {}
    for entry in sets:
        target, sep, value = entry.partition("=")
        if not sep or not target or target.endswith(":"):
            # Not shown: what was typed may be a secret with a wrong separator.
            raise ValueError("--set: an entry is not [CONNECTOR:]KEY=VALUE (it is not shown)")
        found[target] = _value(f"--set {target}", value)
    return by_connector(found)


def worker_properties(path: str | None) -> dict[str, str] | None:
    """Kafka Connect's worker properties, from the file named; ValueError naming the option
    when it cannot be read."""
    if path is None:
        return None
    return parse_properties(_read("--worker-properties", path))


OPTIONS = {
    "url": "--from/--to",
    "worker": "--worker-properties",
    "timeout_s": "--timeout",
    "connect": "--connect-ca/--connect-cert",
    "connect.password": "--connect-password",
    "connect.token": "--connect-token",
    "connect.key_pem": "--connect-cert/--connect-key",
}
"""The options the request's settings come from, for its messages."""


def _value(option: str, value: str) -> str:
    """``value``, or with ``@path`` the file's text (its last newline dropped)."""
    if not value.startswith("@"):
        return value
    return _read(option, value[1:]).rstrip("\n")


def _read(option: str, path: str | None) -> str:
    if path is None:
        return ""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"{option}: cannot read {path}: {exc}") from None


def request_of(args: argparse.Namespace) -> Request:
    """The migration the arguments ask for; ValueError naming the option that is wrong."""
    access = Access(
        username=args.connect_user,
        password=_value("--connect-password", args.connect_password),
        token=_value("--connect-token", args.connect_token),
        ca_pem=_read("--connect-ca", args.connect_ca),
        cert_pem=_read("--connect-cert", args.connect_cert),
        key_pem=_read("--connect-key", args.connect_key),
    )
    try:
        return Request(
            FROM if args.from_url else TO,
            args.from_url or args.to_url,
            tuple(args.connector),
            cutover=args.cutover,
            keep=args.keep,
            install=args.install,
            timeout_s=args.timeout,
            supplied=supplied_values(args.set),
            access=access,
            worker=worker_properties(args.worker_properties),
        )
    except BadRequest as exc:
        raise ValueError(f"{OPTIONS.get(exc.key, exc.key)}: {exc.problem}") from None


def headrace_side(settings: Settings) -> Side:
    """headrace's REST API, as this process reaches it: TLS and token when it has them."""
    loaded = tls.load(settings)
    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    scheme = "https" if loaded is not None else "http"
    context = tls.client_ssl_context(settings, loaded) if loaded is not None else None
    return Side(HEADRACE, f"{scheme}://{settings.rest_addr}", headers, context)


def show_plan(moves: Sequence[Move], output: str, console: Console) -> None:
    if output == "json":
        console.print_json(json.dumps([move_json(m) for m in moves]))
        return
    table = Table("CONNECTOR", "TYPE", "PLUGIN", "VERSION", "OFFSETS", "MOVES", box=None)
    for m in moves:
        verdict = f"yes: {m.next}" if m.movable else "no, as said below"
        summary = offsets_summary(m.kind, m.offsets)
        version = f"{m.from_version or '?'} -> {m.version or '-'}"
        # The class's own name: the package is in -o json, and the table stays readable.
        table.add_row(m.name, m.kind, m.plugin.rpartition(".")[2], version, summary, verdict)
    console.print(table)
    for m in moves:
        if not m.movable:
            console.print(f"\n{m.name} cannot move:", markup=False)
            for blocker in m.blockers:
                console.print(f"  - {blocker}", markup=False)


async def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    request = request_of(args)
    listener = Listener(
        said=lambda name, line: console.print(f"{name}: {line}", markup=False),
        installed=lambda coordinate: console.print(
            f"installed {coordinate} for the whole cluster", markup=False
        ),
    )
    moves = await migrate(request, headrace_side(settings), listener, settings.worker_config)
    if not request.cutover:
        show_plan(moves, args.output, console)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    console = Console(highlight=False, soft_wrap=True)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        settings = settings_or_exit("headrace migrate")
        return asyncio.run(run(args, settings, console))
    except (ValueError, SecurityError) as exc:
        errors.print(f"headrace migrate: error: {exc}")
        return 2
    except (RestError, MoveError) as exc:
        errors.print(f"headrace migrate: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
