"""What the commands of ``headrace`` share: the config service's address (a global option that
kubectl-style may also follow the command), the options ``-o``, ``--wait`` and ``--timeout``,
verbs whose subcommands are kinds with kubectl's aliases, and how failures are shown.

A failure the user can act on is a :class:`CliError`: ``error: ...`` on stderr and exit code 1,
never a traceback. A failed gRPC call reads ``error: <CODE>: <details>``.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, TypeVar

import click
import grpc

from headrace.cli.inputs import InputError, duration
from headrace.cli.output import FORMATS, serialize
from headrace.clients.config import ConfigClient
from headrace.clients.errors import rpc_code
from headrace.core.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

ADDRESS = "headrace.address"  # where --address is kept, in the context's meta (shared by all)
SETTINGS = "headrace.settings"  # the settings, read once, in the same meta

# Each kind and how kubectl lets it be spelled: singular, plural, short.
KINDS = {
    "connector": ("connector", "connectors", "conn", "conns"),
    "task": ("task", "tasks"),
    "plugin": ("plugin", "plugins"),
    "offsets": ("offsets", "offset"),
}


class CliError(click.ClickException):
    """A failure the user can act on: ``error: <message>`` on stderr, exit code 1."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


def rpc_message(error: grpc.RpcError) -> str:
    """``<CODE>: <details>`` of a failed call."""
    details = getattr(error, "details", None)
    return f"{rpc_code(error).name}: {details() if callable(details) else error}"


def _remember_address(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value:
        ctx.meta[ADDRESS] = value


def address_option(command: F) -> F:
    """``--address``, accepted before the verb and after it alike."""
    return click.option(
        "--address",
        metavar="HOST:PORT",
        expose_value=False,
        callback=_remember_address,
        help="The config service's gRPC address "
        "[default: $HEADRACE_CONFIG_ADDR, else 127.0.0.1:50051].",
    )(command)


def settings() -> Settings:
    """The environment's settings, read once per command: what every part of it is given."""
    meta = click.get_current_context().meta
    if SETTINGS not in meta:
        meta[SETTINGS] = Settings()
    found: Settings = meta[SETTINGS]
    return found


def client() -> ConfigClient:
    """A client of the config service at ``--address``, else at the environment's."""
    address = click.get_current_context().meta.get(ADDRESS) or settings().config_addr
    return ConfigClient(address, settings())


def output_option(*extra: str, default: str | None = "table") -> Callable[[F], F]:
    """``-o``: a table, JSON or YAML, and any ``extra`` formats of the command."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice((*FORMATS, *extra)),
        default=default,
        show_default=default is not None,
        help="table for people; json or yaml (Kafka Connect's REST shapes) for scripts.",
    )


class Duration(click.ParamType):
    """Seconds, written as kubectl writes ``--timeout``: 60, 60s, 2m, 500ms."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            return duration(str(value))
        except InputError as exc:
            self.fail(str(exc), param, ctx)


def wait_options(goal: str) -> Callable[[F], F]:
    """``--wait`` (until ``goal``) and ``--timeout``."""

    def decorate(command: F) -> F:
        command = click.option(
            "--timeout",
            type=Duration(),
            default="60s",
            show_default=True,
            help="How long --wait waits (60, 60s, 2m).",
        )(command)
        return click.option("--wait", is_flag=True, help=f"Wait until {goal}.")(command)

    return decorate


def terminal_width() -> int | None:
    """The terminal's width when stdout is one; None (never fold) when it is a pipe or file."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def emit(data: Any, fmt: str, human: Callable[[int | None], str]) -> None:
    """``data`` serialized, or for ``table`` what ``human`` makes of it at the terminal's width."""
    text = human(terminal_width()) if fmt == "table" else serialize(data, fmt)
    click.echo(text, nl=False)


class Failures:
    """Errors of a command that goes on past them (``get a b``, ``delete a b``): each is shown as
    it happens, and the command exits 1 at the end if there was any."""

    def __init__(self) -> None:
        self.count = 0

    @contextmanager
    def each(self, what: str = "") -> Iterator[None]:
        """Shows a failure of the block, prefixed with ``what`` it was about, and goes on."""
        prefix = f"{what}: " if what else ""
        try:
            yield
        except grpc.RpcError as exc:
            CliError(prefix + rpc_message(exc)).show()
            self.count += 1
        except InputError as exc:
            CliError(prefix + str(exc)).show()
            self.count += 1

    def exit_if_any(self) -> None:
        if self.count:
            click.get_current_context().exit(1)


def kind_of(word: str) -> str:
    """The kind a word names, for any of its spellings; the word itself for none."""
    return next((kind for kind, words in KINDS.items() if word in words), word)


class KindGroup(click.Group):
    """A verb whose subcommands are kinds, as kubectl's: any spelling of a kind finds its
    subcommand (``get conn``), and ``connector/NAME`` reads as ``connector NAME``."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        wanted = kind_of(cmd_name)
        for name in self.list_commands(ctx):
            if kind_of(name) == wanted:
                return super().get_command(ctx, name)
        return None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and "/" in args[0] and not args[0].startswith("-"):
            kind, _, name = args[0].partition("/")
            args = [kind, name, *args[1:]]
        return super().resolve_command(ctx, args)
