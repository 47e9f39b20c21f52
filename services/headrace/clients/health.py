"""The standard health service (``grpc.health.v1.Health``) every headrace server serves, as a
probe asks it: by a service's full name, or ``""`` for the whole server
(``headrace.core.observability.health`` serves it)."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def status(channel: grpc.Channel, service: str, timeout: float) -> str:
    """What the health service on ``channel`` says of ``service``, by name (SERVING,
    NOT_SERVING...); a failed call raises ``grpc.RpcError`` (UNAVAILABLE: nothing answers;
    NOT_FOUND: an unknown name)."""
    answer = health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=timeout
    )
    name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
    return name


def serving(channel: grpc.Channel, service: str, timeout: float) -> bool:
    """Whether ``service`` is SERVING on ``channel``; False when nothing answers yet, or the
    name is not registered yet."""
    try:
        return status(channel, service, timeout) == "SERVING"
    except grpc.RpcError:
        return False


async def serving_async(channel: grpc.aio.Channel, service: str, deadline_s: float) -> bool:
    """:func:`serving`, on an asyncio channel, the call bounded by ``deadline_s``."""
    try:
        answer = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=deadline_s
        )
    except grpc.RpcError:
        return False
    return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)
