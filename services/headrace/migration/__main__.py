"""``headrace migrate``: move connectors between a Kafka Connect cluster and headrace, with their
source offsets and sink positions.

    headrace migrate --from http://connect:8083 [--connector NAME ...] --plan
    headrace migrate --from http://connect:8083 [--connector NAME ...] --cutover [--keep]
    headrace migrate --to http://connect:8083 ...            (and back)

headrace's side is the REST API at ``HEADRACE_REST_ADDR``, with the process's TLS and token
(``headrace.core.settings``). Exit codes: 0 done (or planned), 1 a connector could not move, 2
bad arguments or settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import aiohttp
from rich.console import Console
from rich.table import Table

from headrace.core.security import tls
from headrace.core.security.tls import SecurityError
from headrace.core.settings import Settings, settings_or_exit
from headrace.migration.connect import ConnectApi, RestError, Side
from headrace.migration.cutover import WAIT_S, Cutover, MoveError, Step, next_step
from headrace.migration.plan import HIDDEN, Move, offsets_summary, plan_move, version_to_run

CONNECT = "Kafka Connect"
HEADRACE = "headrace"


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
        "--keep", action="store_true", help="keep each connector STOPPED where it came from"
    )
    parser.add_argument(
        "--timeout", type=float, default=WAIT_S, help="seconds to wait for each state change"
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return parser.parse_args(argv)


def supplied_values(sets: Sequence[str]) -> dict[str | None, dict[str, str]]:
    """``--set`` values by connector (None: for every connector); ValueError, naming the entry
    but never its value, for one that is not ``[CONNECTOR:]KEY=VALUE``."""
    found: dict[str | None, dict[str, str]] = {}
    for entry in sets:
        target, sep, value = entry.partition("=")
        if not sep or not target:
            # Not shown: what was typed may be a secret with a wrong separator.
            raise ValueError("--set: an entry is not [CONNECTOR:]KEY=VALUE (it is not shown)")
        connector, colon, key = target.rpartition(":")
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text().rstrip("\n")
            except OSError as exc:
                raise ValueError(f"--set {target}: cannot read {value[1:]}: {exc}") from None
        found.setdefault(connector if colon else None, {})[key] = value
    return found


def headrace_side(settings: Settings) -> Side:
    """headrace's REST API, as this process reaches it: TLS and token when it has them."""
    loaded = tls.load(settings)
    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    scheme = "https" if loaded is not None else "http"
    context = tls.client_ssl_context(settings, loaded) if loaded is not None else None
    return Side(HEADRACE, f"{scheme}://{settings.rest_addr}", headers, context)


async def plan(
    source: ConnectApi,
    target: ConnectApi,
    names: Sequence[str],
    supplied: Mapping[str | None, Mapping[str, str]],
    *,
    keep: bool = False,
) -> list[Move]:
    """Each connector's move, from what both sides answer now; changes nothing."""
    plugins, theirs = await target.plugins(), await source.plugins()
    moves = []
    for name in names or await source.names():
        here, there = await source.status(name), await target.status(name)
        # Gone from where it comes from, a connector an earlier run moved is read where it is.
        side = source if here is not None else target
        config = await side.config(name) or {}
        try:
            step, conflict = next_step(here, there, keep=keep), None
        except MoveError as exc:
            step, conflict = None, str(exc)
        values = {**supplied.get(None, {}), **supplied.get(name, {})}
        merged = {**config, **values}
        validation, refused = None, None
        if step is Step.CREATE and HIDDEN not in merged.values():
            try:
                validation = await target.validate(merged.get("connector.class", ""), merged)
            except RestError as exc:
                refused = str(exc)
        if step in (Step.STOP, Step.MOVE_OFFSETS):
            conflict = differs(merged, await target.config(name) or {}, target.name)
        moves.append(
            plan_move(
                name,
                await side.kind(name) or "",
                config,
                await source.offsets(name) if here is not None else [],
                supplied=values,
                plugins=plugins,
                validation=validation,
                refused=refused,
                target=target.name,
                next_step=step.said(source.name, target.name) if step is not None else "",
                creating=step is Step.CREATE,
                conflict=conflict,
                from_version=version_to_run(theirs, config) if here is not None else "",
            )
        )
    return moves


def differs(wanted: Mapping[str, str], there: Mapping[str, str], target: str) -> str | None:
    """Why a STOPPED connector of that name on the side it goes to is not the one a move
    created (keys whose values differ, a hidden value on either side aside); None if it is."""
    keys = sorted(
        k
        for k in set(wanted) | set(there)
        if k != "name"
        and HIDDEN not in (wanted.get(k), there.get(k))
        and wanted.get(k) != there.get(k)
    )
    if not keys:
        return None
    return (
        f"a STOPPED connector of that name on {target} has another config ({', '.join(keys)}): "
        "delete it there first, or move it from there"
    )


def show_plan(moves: Sequence[Move], output: str, console: Console) -> None:
    if output == "json":
        rows = [
            {
                "name": m.name,
                "type": m.kind,
                "plugin": m.plugin,
                "version": m.version,
                "from_version": m.from_version,
                "offsets": list(m.offsets),
                "movable": m.movable,
                "next": m.next,
                "blockers": list(m.blockers),
            }
            for m in moves
        ]
        console.print_json(json.dumps(rows))
        return
    table = Table("CONNECTOR", "TYPE", "PLUGIN", "VERSION", "OFFSETS", "MOVES", box=None)
    for m in moves:
        verdict = f"yes: {m.next}" if m.movable else "no: " + "; ".join(m.blockers)
        summary = offsets_summary(m.kind, m.offsets)
        version = f"{m.from_version or '?'} -> {m.version or '-'}"
        table.add_row(m.name, m.kind, m.plugin, version, summary, verdict)
    console.print(table)


async def run(args: argparse.Namespace, settings: Settings, console: Console) -> int:
    ours = headrace_side(settings)
    connect = Side(CONNECT, args.from_url or args.to_url)
    supplied = supplied_values(args.set)
    async with aiohttp.ClientSession() as session:
        theirs, here = ConnectApi(connect, session), ConnectApi(ours, session)
        source, target = (theirs, here) if args.from_url else (here, theirs)
        moves = await plan(source, target, args.connector, supplied, keep=args.keep)
        if args.plan:
            show_plan(moves, args.output, console)
            return 0
        cutover = Cutover(
            source,
            target,
            keep=args.keep,
            wait_s=args.timeout,
            report=lambda name, line: console.print(f"{name}: {line}", highlight=False),
        )
        for done, move in enumerate(moves):
            try:
                await cutover.move(move)
            except MoveError as exc:
                rest = [m.name for m in moves[done + 1 :]]
                untouched = f"; not tried: {', '.join(rest)}" if rest else ""
                raise MoveError(f"{exc}{untouched}") from None
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
