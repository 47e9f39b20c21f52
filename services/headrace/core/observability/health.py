"""What every gRPC server serves besides its own API: the standard health service
(``grpc.health.v1.Health``) and server reflection, so that probes, grpcurl and similar tools
work with no proto files.

Health answers per service, as the protocol defines it:

| name | SERVING when | probe |
| --- | --- | --- |
| ``""`` (the server) | it answers at all | liveness |
| an API's full name (``headrace.v1.ConfigService``) | it answers from current state | readiness |

Every name starts NOT_SERVING; the service says when its replay has caught up (``ready``), and
a service that can stop being current (a coordinator replica that loses its lease) says so too
(``not_ready``). On shutdown every name turns NOT_SERVING first, so probes stop sending traffic
before the server goes away. How a client asks is ``headrace.clients.health``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVER = ""  # the name that stands for the whole server


class Health:
    """The health of one asyncio server's APIs, named by their full names."""

    def __init__(self, services: Sequence[str]) -> None:
        self.services = tuple(services)
        self._servicer = health.aio.HealthServicer()

    def register(self, server: grpc.aio.Server) -> None:
        """Adds the health service and reflection (of the APIs, health and reflection) to
        ``server``, before it starts."""
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)
        reflection.enable_server_reflection(reflected(self.services), server)

    async def serving(self) -> None:
        """The server answers; its APIs are not ready yet."""
        await self._servicer.set(SERVER, SERVING)
        for name in self.services:
            await self._servicer.set(name, NOT_SERVING)

    async def ready(self, *services: str) -> None:
        """``services`` (every API when none is named) answer from current state."""
        for name in services or self.services:
            await self._servicer.set(name, SERVING)

    async def not_ready(self, *services: str) -> None:
        for name in services or self.services:
            await self._servicer.set(name, NOT_SERVING)

    async def shutting_down(self) -> None:
        """Every name NOT_SERVING, for good: the server is about to stop."""
        await self._servicer.enter_graceful_shutdown()


class ThreadedHealth:
    """The same for a thread-pool server (the Spark executor's)."""

    def __init__(self, services: Sequence[str]) -> None:
        self.services = tuple(services)
        self._servicer = health.HealthServicer()

    def register(self, server: grpc.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)
        reflection.enable_server_reflection(reflected(self.services), server)
        self._servicer.set(SERVER, SERVING)
        for name in self.services:
            self._servicer.set(name, NOT_SERVING)

    def ready(self) -> None:
        for name in self.services:
            self._servicer.set(name, SERVING)

    def shutting_down(self) -> None:
        self._servicer.enter_graceful_shutdown()


def reflected(services: Sequence[str]) -> list[str]:
    """The names reflection lists: the APIs, health and reflection itself."""
    return [*services, health.SERVICE_NAME, reflection.SERVICE_NAME]


def full_name(descriptor_module: object, service: str) -> str:
    """A service's full name from its generated ``*_pb2`` module (``headrace.v1.X``)."""
    descriptor: Any = getattr(descriptor_module, "DESCRIPTOR")  # noqa: B009 - typed as Any
    found: str = descriptor.services_by_name[service].full_name
    return found
