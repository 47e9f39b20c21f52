"""``headrace probe HOST:PORT [--service NAME]``: one call of the standard gRPC health check
(``grpc.health.v1.Health/Check``), for container health checks.

The image runs it as its HEALTHCHECK (``deploy/entrypoint.sh``), since it holds neither grpcurl
nor grpc_health_probe; Kubernetes asks the same service with its native ``grpc:`` probes, which
speak only plaintext, or under TLS with ``exec`` probes of this command (the production overlay's
``security.yaml``). It prints the status, and exits 0 only when it is SERVING: NOT_SERVING, a
name the server does not know and a server that does not answer in time all exit 1
(``error: ...``).
"""

from __future__ import annotations

import click
import grpc

from headrace.cli.context import CliError, settings
from headrace.clients import health
from headrace.clients.errors import rpc_code
from headrace.core.security import tls
from headrace.core.settings import Settings


@click.command()
@click.argument("address", metavar="HOST:PORT")
@click.option(
    "--service",
    default="",
    help="The name to check: none for the server itself (liveness), or an API's full name, "
    "such as headrace.v1.ConfigService, which is SERVING once it answers from current state "
    "(readiness).",
)
@click.option(
    "--server-name",
    default="",
    help="The name the server's certificate must carry, under TLS (HEADRACE_TLS_CA set): "
    "for a probe on loopback of a service whose certificate names it otherwise. Default: "
    "the host of HOST:PORT.",
)
@click.option(
    "--timeout",
    type=float,
    default=3.0,
    show_default=True,
    help="Seconds to wait for the answer.",
)
def probe(address: str, service: str, server_name: str, timeout: float) -> None:
    """Checks the health of the gRPC server at HOST:PORT, or of one of its APIs."""
    try:
        status = check(settings(), address, service, timeout, server_name)
    except grpc.RpcError as exc:
        if rpc_code(exc) is grpc.StatusCode.NOT_FOUND:
            raise CliError(f"{address} knows no service named {service!r}") from None
        raise  # the root command prints it: error: UNAVAILABLE: ...
    if status != "SERVING":
        raise CliError(f"{service or 'the server'} at {address} is {status}")
    click.echo(status)


def check(
    given: Settings, address: str, service: str, timeout: float, server_name: str = ""
) -> str:
    """The status name the health service gives for ``service`` at ``address``; a failed call
    raises ``grpc.RpcError`` (UNAVAILABLE: nothing answers; NOT_FOUND: an unknown name).
    TLS as the settings say (``headrace.core.security.tls``): health needs no token."""
    with tls.channel(address, given, server_name or None) as channel:
        return health.status(channel, service, timeout)
