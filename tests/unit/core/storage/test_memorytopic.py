"""A topic held in a process (standalone mode's configs, status and assignments): compacted as
Kafka compacts one, so a process that runs for months holds its state, not its history."""

from __future__ import annotations

from headrace.core.storage.topiclog import COMPACT_AFTER, MemoryTopic, memory_logs


async def test_a_compacted_memory_topic_keeps_the_latest_of_each_key_at_its_offset() -> None:
    topic = MemoryTopic("status", compacted=True)
    log = memory_logs(topic)(lambda r: None)
    await log.start()
    for i in range(5000):
        await log.append_many([(f"k{i % 10}", None if i % 10 == 9 else str(i).encode())])
    assert len(topic.records) <= 2 * 9 + COMPACT_AFTER + 1  # its state, not its history
    offsets = [r.offset for r in topic.records]
    assert offsets == sorted(set(offsets)) and offsets[-1] == 4999
    replayed: dict[str, bytes | None] = {}
    await memory_logs(topic)(lambda r: replayed.__setitem__(r.key, r.value)).start()
    live = {k: v for k, v in replayed.items() if v is not None}  # a tombstone may be read
    assert live == {f"k{k}": str(4990 + k).encode() for k in range(9)}  # k9: tombstoned
