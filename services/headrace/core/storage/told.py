"""The deletions workers told, as records on the assignments topic; and the workers' writer.

| key | value | meaning |
| --- | --- | --- |
| ``told-<incarnation>-<task>-<connector>`` | ``DeletionTold`` | the unit's plugin heard it |
| ``told-<incarnation>-<task>-<connector>`` | tombstone | the deletion is no longer pending |

A worker writes the record once its plugin has returned from ``stop(deleted=True)``; the leading
coordinator writes the tombstone with the first generation it records without the deletion.

A worker acknowledges a deletion twice: over its stream to the coordinator that leads, and here.
The stream is the quick way; this record is the one that outlives the worker. Without it, a
leader that never heard the acknowledgement (frozen, or failed over as it came) resumes with the
deletion pending, and if the worker that told it does not rejoin within its grace period (killed
for good, or killed and then frozen), hands it to another worker, whose plugin then hears it a
second time (found by the nemesis, seed 412). The leading coordinator reads these records when it
replays the topic and while it leads, as acknowledgements from the worker named. Workers write
them; only the leading coordinator tombstones them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from aiokafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from headrace.core.model import wire
from headrace.core.model.structs import Instance
from headrace.core.storage.topiclog import LogFactory
from headrace.v1 import events_pb2

PREFIX = "told-"


@dataclass(frozen=True)
class DeletionTold:
    instance: Instance
    worker_id: str


@dataclass(frozen=True)
class ToldForgotten:
    """The tombstone of a told record: it carries only its key."""

    key: str


ToldEvent = DeletionTold | ToldForgotten


def key(instance: Instance) -> str:
    unit, incarnation = instance
    return f"{PREFIX}{incarnation}-{unit.task}-{unit.connector}"


def encode(instance: Instance, worker_id: str) -> tuple[str, bytes]:
    unit, incarnation = instance
    msg = events_pb2.DeletionTold(
        unit=wire.unit_to_pb(unit),
        incarnation=incarnation,
        worker_id=worker_id,
        told_at_ms=int(time.time() * 1000),
    )
    return key(instance), msg.SerializeToString()


def forget(instance: Instance) -> tuple[str, None]:
    return key(instance), None


def decode(record_key: str, value: bytes | None) -> ToldEvent | None:
    """The event a record carries; None for a key of another protocol."""
    if not record_key.startswith(PREFIX):
        return None
    if value is None:
        return ToldForgotten(record_key)
    msg = events_pb2.DeletionTold.FromString(value)
    return DeletionTold((wire.unit_from_pb(msg.unit), msg.incarnation), msg.worker_id)


class ToldRecords:
    """The deletions this worker told, appended to the assignments topic (``logs``)."""

    def __init__(self, logs: LogFactory, worker_id: str, logger: FilteringBoundLogger) -> None:
        self._log = logs(lambda _: None)
        self._worker_id = worker_id
        self._logger = logger

    async def start(self) -> None:
        await self._log.start(reader=False)

    async def record(self, instances: Iterable[Instance]) -> None:
        """Appends a record per deletion; one that fails is logged, and the worker's Join
        still says it told it (see ``worker.delivered``)."""
        records = [encode(instance, self._worker_id) for instance in instances]
        if not records:
            return
        try:
            await self._log.append_many(list(records))
        except KafkaError as exc:
            self._logger.error("deletion_told_unrecorded", count=len(records), error=repr(exc))

    async def close(self) -> None:
        await self._log.close()
