"""The ``headrace`` command: manage connectors over the config service's gRPC API in kubectl's
idioms (``apply -f``, ``get``, ``describe``, ``patch``, ``delete``, ...), and ask the coordinator
and the services how they are. This module only wires the commands together; each family lives
in its own module. Running the system on one machine is developer tooling, apart from it:
``python -m headrace.local`` (``headrace.local``)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import grpc

from headrace.cli import changing, coordinator, lifecycle, offsets, plugins, probe, reading
from headrace.cli.context import CliError, KindGroup, address_option, rpc_message
from headrace.cli.inputs import InputError
from headrace.core.security.tls import SecurityError


class Headrace(KindGroup):
    """The root command: a failed call or unusable input ends the command with ``error: ...``
    and exit code 1, never a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the order they are added in: connectors first, as kubectl

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except grpc.RpcError as exc:
            raise CliError(rpc_message(exc)) from None
        except (InputError, SecurityError) as exc:
            raise CliError(str(exc)) from None


@click.group(cls=Headrace, context_settings={"help_option_names": ["-h", "--help"]})
@address_option
def cli() -> None:
    """Manage headrace's connectors, and see how its services are.

    \b
    Connectors, as kubectl manages resources:
      headrace apply -f connectors/              create or update from Connect's JSON
      headrace get connectors                    a table; -o json or -o yaml for scripts
      headrace describe connector NAME           config, status, traces, offsets
      headrace patch connector NAME --set k=v --unset k
      headrace pause|resume|stop|delete connector NAME [--wait]
      headrace restart connector NAME [--include-tasks] [--only-failed]
      headrace offsets get|alter|reset NAME
      headrace topics get|reset NAME
      headrace plugins list|config, headrace validate PLUGIN -f FILE

    \b
    One worker in one process, from Kafka Connect's own files:
      headrace standalone worker.properties connector.properties...

    \b
    Moving from Kafka Connect, with offsets, and back:
      headrace migrate --from http://connect:8083 --plan|--cutover
    """


@click.command(
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def standalone(args: tuple[str, ...]) -> None:
    """Run one worker in this process, from Kafka Connect's own files:
    headrace standalone worker.properties [connector.properties|.json ...] (-h for more)."""
    # This process becomes the worker: signals sent to it reach the worker.
    os.execv(sys.executable, [sys.executable, "-m", "headrace.standalone", *args])


@click.command(
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def migrate(args: tuple[str, ...]) -> None:
    """Move connectors between Kafka Connect and headrace with their offsets:
    headrace migrate --from|--to URL --plan|--cutover (-h for more)."""
    os.execv(sys.executable, [sys.executable, "-m", "headrace.migration", *args])


for command in (
    changing.apply,
    changing.create,
    reading.get,
    reading.describe,
    changing.patch,
    changing.delete,
    lifecycle.pause,
    lifecycle.resume,
    lifecycle.stop,
    lifecycle.restart,
    offsets.offsets,
    offsets.topics,
    plugins.plugins,
    plugins.validate,
    coordinator.coordinator,
    probe.probe,
    standalone,
    migrate,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """The ``headrace`` entry point; ``argv`` defaults to the process's arguments."""
    cli.main(args=argv, prog_name="headrace")


if __name__ == "__main__":
    main()
