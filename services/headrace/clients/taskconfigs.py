"""How a worker hands a connector's task configs to the config service: an internal call,
signed with the cluster's session key (``headrace.core.security.sessionkey``).

The key is on the configs topic; the worker tails that topic for it alone, from the start of the
worker, and signs each call with the latest key it has read. A call refused UNAUTHENTICATED was
signed with a key the service no longer accepts (it rotated): the worker reads on and signs anew.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence

import grpc
import structlog

from headrace.core.backoff import Backoff
from headrace.core.model import configlog
from headrace.core.model.configstate import SessionKey, SessionKeyCreated
from headrace.core.observability import metrics
from headrace.core.security import sessionkey, tls
from headrace.core.settings import Settings
from headrace.core.storage.topiclog import LogFactory, LogRecord, kafka_logs
from headrace.v1 import config_pb2, internal_pb2_grpc

CALL_TIMEOUT_S = 60.0
ATTEMPTS = 8
KEY_WAIT_S = 60.0  # a fresh cluster's config service writes the first key as it starts


class TaskConfigsFailed(RuntimeError):
    """The task configs were not taken: the message says why."""


class TaskConfigsStale(TaskConfigsFailed):
    """The task configs were made from what is no longer the connector's (another
    incarnation, an older config) or lost to a newer set: nothing to do but wait for what the
    next assignment brings."""


class TaskConfigsGone(TaskConfigsFailed):
    """The connector is no longer there (deleted since its assignment was made): its deletion
    reaches this worker in the assignment that follows."""


class TaskConfigsClient:
    """Puts task configs, riding out a short outage of the config service and key rotations."""

    def __init__(
        self,
        settings: Settings,
        logger: structlog.stdlib.BoundLogger,
        configs: LogFactory | None = None,
    ) -> None:
        self._keys: tuple[SessionKey, ...] = ()
        self._has_key = asyncio.Event()
        self._log = (configs or kafka_logs(settings, "configs"))(self._on_record)
        self._reading: asyncio.Task[None] | None = None
        self._channel = tls.aio_channel(settings.config_addr, settings)
        self._stub = internal_pb2_grpc.TaskConfigServiceStub(self._channel)
        self._logger = logger

    def _on_record(self, record: LogRecord) -> None:
        if record.key != configlog.SESSION_KEY:
            return  # the rest of the configs reach the worker through its assignments
        event = configlog.decode(record.key, record.value)
        if isinstance(event, SessionKeyCreated):
            self._keys = (*self._keys, event.key)[-2:]
            self._has_key.set()

    def start(self) -> None:
        """Starts reading keys in the background: the worker need not wait for the replay."""
        self._reading = asyncio.create_task(self._replay(), name="session-keys-replay")

    async def _replay(self) -> None:
        # Timed, but with the collector left on: the worker keeps only the session keys of this
        # topic, and runs everything else while this replay goes on in the background.
        with metrics.replay("configs"):
            await self._log.start(writer=False)

    async def close(self) -> None:
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
        await self._log.close()
        await self._channel.close()

    async def _key(self, fresh: bool) -> SessionKey:
        assert self._reading is not None, "start() first"
        await self._reading  # the replay, and what it raised
        if fresh:
            await self._log.catch_up()
        try:
            await asyncio.wait_for(self._has_key.wait(), KEY_WAIT_S)
        except TimeoutError:
            raise RuntimeError(
                f"no session key on the configs topic after {KEY_WAIT_S:.0f} s: "
                "is the config service running?"
            ) from None
        return self._keys[-1]

    async def put(
        self, name: str, tasks: Sequence[Mapping[str, str]], incarnation: str, config_version: int
    ) -> None:
        """Puts the task configs a connector's incarnation made from its config of
        ``config_version``; TaskConfigsStale when the service holds a newer config or task
        set (the connector's next assignment brings it), TaskConfigsFailed when it refuses
        them or cannot be reached, TaskConfigsGone when the connector is not there."""
        request = config_pb2.PutTaskConfigsRequest(
            connector=name,
            tasks=[config_pb2.TaskInfo(task=i, config=dict(t)) for i, t in enumerate(tasks)],
            incarnation=incarnation,
            config_version=config_version,
        )
        try:
            await self._put(name, request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() is grpc.StatusCode.FAILED_PRECONDITION:
                raise TaskConfigsStale(exc.details() or "") from None
            if exc.code() is grpc.StatusCode.NOT_FOUND:
                raise TaskConfigsGone(exc.details() or "") from None
            raise TaskConfigsFailed(
                f"the config service refused the task configs ({exc.code().name}): {exc.details()}"
            ) from None

    async def _put(self, name: str, request: config_pb2.PutTaskConfigsRequest) -> None:
        body = request.SerializeToString(deterministic=True)
        waits, fresh = Backoff(0.2, 5.0), False
        for attempt in itertools.count(1):
            signature = sessionkey.sign(await self._key(fresh), body, sessionkey.now_ms())
            try:
                await self._stub.PutTaskConfigs(request, metadata=signature, timeout=CALL_TIMEOUT_S)
                return
            except grpc.aio.AioRpcError as exc:
                retried = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED)
                if exc.code() not in retried or attempt >= ATTEMPTS:
                    raise
                fresh = exc.code() is grpc.StatusCode.UNAUTHENTICATED
                self._logger.warning(
                    "task_configs_retry", connector=name, attempt=attempt, code=exc.code().name
                )
                await asyncio.sleep(waits.next_s())
