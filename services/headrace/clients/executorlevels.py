"""KIP-976's cluster log levels, passed on to the Spark executor.

The executor has no Join stream of its own, so each worker told of new levels hands all it
holds on (``SetLogLevels``), each with when it was set: the executor sets each once, so the
same levels from several workers change nothing twice, and a level set before the executor
started is not its to take. An executor that cannot be reached is tried again for a while
(``RETRY_S``), then left: it was not running when the level was set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import grpc

from headrace.core.backoff import Backoff
from headrace.core.observability import log
from headrace.core.runner import cancel
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.v1 import coordinator_pb2, executor_pb2_grpc

RETRY_S = 60.0
CALL_TIMEOUT_S = 10.0
_FIRST_BACKOFF_S = 0.5
_AWAY = (
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,  # busy: its threads are all writing
)


class ExecutorLevels:
    """Hands this worker's cluster levels to the executor at ``settings.executor_addr``."""

    def __init__(self, settings: Settings, logger: Any) -> None:
        self._settings = settings
        self._log = logger
        self._channel: grpc.aio.Channel | None = None
        self._sending: asyncio.Task[None] | None = None

    def changed(self) -> None:
        """The cluster levels this worker holds changed: sends them all, instead of any send
        still under way."""
        if self._sending is not None:
            self._sending.cancel()
        levels = dict(log.cluster_levels.applied)
        self._sending = asyncio.create_task(self._send(levels))

    async def close(self) -> None:
        await cancel(self._sending)
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def _send(self, levels: Mapping[str, tuple[str, int]]) -> None:
        if self._channel is None:
            self._channel = tls.aio_channel(self._settings.executor_addr, self._settings)
        stub = executor_pb2_grpc.ExecutorStub(self._channel)
        request = coordinator_pb2.LogLevels(
            levels={
                name: coordinator_pb2.LogLevel(level=level, at_ms=at_ms)
                for name, (level, at_ms) in levels.items()
            }
        )
        loop = asyncio.get_running_loop()
        deadline, waits = loop.time() + RETRY_S, Backoff(_FIRST_BACKOFF_S, 5.0)
        while True:
            try:
                answer = await stub.SetLogLevels(request, timeout=CALL_TIMEOUT_S)
            except grpc.aio.AioRpcError as exc:
                away = exc.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                )
                if away and loop.time() + waits.upcoming_s < deadline:
                    await asyncio.sleep(waits.next_s())
                    continue
                self._log.warning(
                    "executor_log_levels_failed", code=exc.code().name, error=exc.details()
                )
                return
            except Exception as exc:  # noqa: BLE001 - a task of its own: said, not lost
                self._log.warning("executor_log_levels_failed", error=repr(exc))
                return
            self._log.info("executor_log_levels_sent", loggers=len(levels), set=len(answer.changed))
            return
