"""A real PostgreSQL server for the suite, from the binaries the pgserver package ships.

pgserver starts PostgreSQL on a Unix socket only, and the JDBC driver the executor uses speaks
TCP: the server pgserver initialised is started again here on a loopback port, with logical
decoding on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pgserver
import psycopg

from headrace.local.kafka import free_port

# pgserver makes its command functions at import time, out of mypy's sight.
pg_ctl: Callable[..., Any] = pgserver.pg_ctl  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Postgres:
    """A running server: where it listens, and who may connect (trust, no password)."""

    data: Path
    system_user: str | None
    port: int
    host: str = "127.0.0.1"
    user: str = "postgres"
    database: str = "postgres"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}?user={self.user}"

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(
            host=self.host, port=self.port, dbname=self.database, user=self.user, autocommit=True
        )

    def stop(self) -> None:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data, user=self.system_user)


def start_postgres(data: Path, port: int | None = None) -> Postgres:
    """Initialises a server in ``data`` and starts it on ``port`` of loopback, else a free one
    (outside the ephemeral range, where headrace's default ports are)."""
    # As root (CI containers), pgserver makes an unprivileged user to run the server as.
    initialised = pgserver.get_server(data, cleanup_mode=None)
    user = initialised.system_user
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data, user=user)
    port = port or free_port()
    # Logical decoding, for Debezium's PostgreSQL connector (tests/integration/test_debezium.py).
    logical = "-c wal_level=logical -c max_replication_slots=8 -c max_wal_senders=8"
    options = f"-h 127.0.0.1 -p {port} -k {data} {logical}"
    log = data / "server.log"
    pg_ctl(["-w", "-o", options, "-l", str(log), "start"], pgdata=data, user=user)
    server = Postgres(data, user, port)
    with server.connect() as conn:
        conn.execute("SELECT 1")
    return server
