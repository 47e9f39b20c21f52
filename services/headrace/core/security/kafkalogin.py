"""Why a Kafka client could not connect, in words an operator can act on.

aiokafka reports a login the broker refused as it reports a broker it cannot reach: "Unable to
bootstrap", the broker's reason only in its log. :func:`start` starts a client, and when it fails
so, connects once more to each bootstrap server by itself, within ``timeout_s``, and raises what
went wrong there: the broker refused the SASL login (a wrong user, password or mechanism), or
the TLS handshake failed (a certificate not trusted, a host name it does not name, a client
certificate the broker wants). The services' first connection (``topics.ensure_topic``, at
start-up) goes through it, so such a mistake stops a service at once, named.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Protocol

from aiokafka.conn import create_conn
from aiokafka.errors import KafkaConnectionError, KafkaError

from headrace.core.model.errors import HeadraceError
from headrace.core.security.kafkasecurity import (
    PROTOCOL,
    SASL_MECHANISM,
    SASL_USERNAME,
    SSL_CAFILE,
    SSL_CERTFILE,
    SSL_KEYFILE,
    KafkaSecurity,
)

PROBE_TIMEOUT_S = 15.0


class KafkaLoginError(HeadraceError, ConnectionError):
    """A broker refused this process's login or TLS handshake; the message says which and why."""


class Startable(Protocol):
    async def start(self) -> None: ...


async def start(
    client: Startable,
    bootstrap_servers: str,
    security: KafkaSecurity,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> None:
    """Starts ``client``; if it cannot bootstrap, raises the reason a broker gives
    (KafkaLoginError), or the client's own error when none does."""
    try:
        await client.start()
    except KafkaConnectionError as exc:
        refusal = await refusal_of(bootstrap_servers, security, timeout_s)
        if refusal is None:
            raise
        raise refusal from exc


async def refusal_of(
    bootstrap_servers: str, security: KafkaSecurity, timeout_s: float = PROBE_TIMEOUT_S
) -> KafkaLoginError | None:
    """Connects to each bootstrap server in turn; the first refusal of the login or of the
    TLS handshake, or None if there is none (a server down, or all accept)."""
    kwargs: dict[str, Any] = security.client_kwargs(bootstrap_servers)
    del kwargs["bootstrap_servers"]
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            conn = await asyncio.wait_for(
                create_conn(host.strip("[]"), int(port), **kwargs), timeout_s
            )
        except ssl.SSLError as exc:
            return _tls_refused(server, security, exc)
        except KafkaConnectionError as exc:
            # A broker that wants a client certificate says so once the handshake is done: the
            # first request fails with its alert.
            if isinstance(exc.__cause__, ssl.SSLError):
                return _tls_refused(server, security, exc.__cause__)
            continue  # closed for another reason: nothing said about the login
        except KafkaError as exc:
            if not security.uses_sasl:
                continue
            return KafkaLoginError(
                f"{server} refused the login of {SASL_USERNAME}={security.sasl_username} with "
                f"{SASL_MECHANISM}={security.sasl_mechanism}: {exc}"
            )
        except OSError:  # TimeoutError too
            continue  # not reachable: nothing said about the login
        conn.close()
    return None


def _tls_refused(server: str, security: KafkaSecurity, exc: ssl.SSLError) -> KafkaLoginError:
    return KafkaLoginError(
        f"the TLS handshake with {server} failed ({PROTOCOL}={security.protocol}): "
        f"{exc.reason or exc}; see {SSL_CAFILE}, {SSL_CERTFILE} and {SSL_KEYFILE}"
    )
