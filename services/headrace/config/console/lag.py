"""Sink connectors' consumer lag: for each sink's group, how many records its partitions hold
past what the group committed. Asked of the cluster with one admin client and one consumer
(in no group) kept for it, and only while someone looks (:meth:`SinkLag.of` keeps an answer
for :data:`FRESH_S`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from headrace.core.observability import log
from headrace.core.settings import Settings

FRESH_S = 5.0
ASK_S = 5.0  # a cluster that does not answer within this: no lag shown, the board goes on


class SinkLag:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._lags: dict[str, int] = {}
        self._asked_at = float("-inf")
        self._asked: frozenset[tuple[str, str]] = frozenset()
        self._lock = asyncio.Lock()

    async def of(self, groups: Mapping[str, str]) -> dict[str, int]:
        """connector -> lag, for these connectors' groups (connector -> group); one whose
        group committed nothing yet has none."""
        wanted = frozenset(groups.items())
        async with self._lock:
            if wanted == self._asked and time.monotonic() - self._asked_at < FRESH_S:
                return self._lags
            try:
                self._lags = await self._read(groups)
            except (KafkaError, TimeoutError) as exc:  # no lag shown; the next look asks again
                log.get().warning("console_lag_failed", error=str(exc))
                self._lags = {}
            self._asked, self._asked_at = wanted, time.monotonic()
            return self._lags

    async def _read(self, groups: Mapping[str, str]) -> dict[str, int]:
        if not groups:
            return {}
        admin, consumer = await self._clients()
        names = list(groups)
        found = await asyncio.wait_for(
            asyncio.gather(*(admin.list_consumer_group_offsets(groups[n]) for n in names)),
            ASK_S,
        )
        committed = {
            name: {tp: m.offset for tp, m in offsets.items() if m.offset >= 0}
            for name, offsets in zip(names, found, strict=True)
        }
        partitions = {tp for offsets in committed.values() for tp in offsets}
        ends = (
            await asyncio.wait_for(consumer.end_offsets(list(partitions)), ASK_S)
            if partitions
            else {}
        )
        return {
            name: sum(max(0, ends.get(tp, at) - at) for tp, at in offsets.items())
            for name, offsets in committed.items()
            if offsets
        }

    async def _clients(self) -> tuple[AIOKafkaAdminClient, AIOKafkaConsumer]:
        if self._admin is None or self._consumer is None:
            admin = AIOKafkaAdminClient(**self._settings.kafka_client())
            await admin.start()
            consumer = AIOKafkaConsumer(**self._settings.kafka_client(), enable_auto_commit=False)
            await consumer.start()
            self._admin, self._consumer = admin, consumer
        return self._admin, self._consumer

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
        if self._admin is not None:
            await self._admin.close()
        self._admin = self._consumer = None
