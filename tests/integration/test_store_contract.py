"""One contract for every store, held against each of its logs: Kafka, in-memory, and a file.

Each store (configs, status, source offsets) is a fold over a log. What a user relies on is the
same whichever log is under it: a write is read back before it returns, and a fresh store that
replays the log arrives at the same state (for a file, as another process reads it anew). The
Kafka runs use the suite's real broker.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from headrace.config.store import ConfigStore, Plan
from headrace.core import runner
from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState
from headrace.core.model.status import State, UnitStatus
from headrace.core.model.structs import Target, WorkUnit
from headrace.core.settings import Settings
from headrace.core.storage.filelog import FileTopic, file_logs
from headrace.core.storage.stores import OffsetStore, StatusStore
from headrace.core.storage.topiclog import LogFactory, MemoryTopic, kafka_logs, memory_logs
from headrace.core.storage.topics import ensure_topics


@dataclass
class Backend:
    """Where the stores' logs live: the suite's Kafka broker, topics in this process, or files
    in ``folder``."""

    settings: Settings
    on_kafka: bool
    folder: Path | None = None
    topics: dict[str, MemoryTopic] = field(default_factory=dict)

    def logs(self, role: str) -> LogFactory:
        if self.on_kafka:
            return kafka_logs(self.settings, role)
        if self.folder is not None:
            if role not in self.topics:
                self.topics[role] = FileTopic(role, self.folder / f"{role}.json")
            return file_logs(cast("FileTopic", self.topics[role]))
        return memory_logs(self.topics.setdefault(role, MemoryTopic(role)))

    def restarted(self) -> Backend:
        """As a process starting again finds the logs: files are read anew."""
        if self.folder is not None:
            self.topics.clear()
        return self

    def config_store(self) -> ConfigStore:
        if self.on_kafka:
            return ConfigStore.on_kafka(self.settings)
        return ConfigStore(self.logs("configs"), StatusStore(self.logs("status")))

    def offset_store(self, connector: str) -> OffsetStore:
        return OffsetStore(
            self.settings, connector, None if self.on_kafka else self.logs("offsets")
        )


@pytest.fixture(params=["memory", "file", pytest.param("kafka", marks=pytest.mark.kafka)])
def backend_kind(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        return Backend(Settings(cluster="memory"), on_kafka=False)
    if request.param == "file":
        return Backend(Settings(cluster="file"), on_kafka=False, folder=tmp_path)
    # Only the Kafka runs start (or share) the suite's broker.
    settings_for: Callable[..., Settings] = request.getfixturevalue("settings_for")
    return Backend(settings_for(), on_kafka=True)


@pytest.fixture
async def backend(backend_kind: Backend) -> Backend:
    if backend_kind.on_kafka:
        await ensure_topics(backend_kind.settings)
    return backend_kind


def writing(records: list[configlog.Record]) -> Plan:
    async def plan(state: ConfigState) -> list[configlog.Record]:
        return records

    return plan


async def test_configs_are_read_back_and_rebuilt_by_replay(backend: Backend) -> None:
    store = backend.config_store()
    await store.start()
    try:
        write = store.transact
        await write(
            writing([configlog.connector_configured("a-b", {"connector.class": "X"}, "i1")])
        )
        await write(writing(configlog.task_set("a-b", [{"t": "0"}, {"t": "1"}])))
        await write(
            writing([configlog.connector_configured("gone", {"connector.class": "Y"}, "i2")])
        )
        state = await write(writing(configlog.deletion("gone", 0)))
        assert dict(state.connectors) == {"a-b": {"connector.class": "X"}}
        assert [dict(t) for t in state.tasks_of("a-b")] == [{"t": "0"}, {"t": "1"}]
    finally:
        await store.close()

    replayed = backend.restarted().config_store()
    await replayed.start()
    try:
        assert await replayed.current() == state
    finally:
        await replayed.close()


async def test_status_reports_reach_every_reader_and_a_removal_forgets(backend: Backend) -> None:
    worker = StatusStore(backend.logs("status"))
    await worker.start(reader=False)
    reader = StatusStore(backend.logs("status"))
    await reader.start(writer=False)
    task, connector = WorkUnit("a-b", 0), WorkUnit.of("a-b")
    try:
        await worker.report(UnitStatus(task, State.RUNNING, "w1", generation=3))
        await worker.report(UnitStatus(task, State.FAILED, "w1", trace="boom", generation=3))
        await worker.report(UnitStatus(connector, State.RUNNING, "w2", plugin_version="2.0.0"))
        await worker.report(UnitStatus(WorkUnit.of("gone"), State.RUNNING, "w2"))
        await worker.remove(WorkUnit.of("gone"))
        seen = await reader.current()
        assert set(seen) == {task, connector}
        assert (seen[task].state, seen[task].trace, seen[task].generation) == (
            State.FAILED,
            "boom",
            3,
        )
        assert seen[connector].plugin_version == "2.0.0"
    finally:
        await worker.close()
        await reader.close()

    replayed = StatusStore(backend.restarted().logs("status"))
    await replayed.start(writer=False)
    try:
        assert await replayed.current() == seen
    finally:
        await replayed.close()


async def test_each_connector_reads_back_only_its_own_latest_offsets(backend: Backend) -> None:
    first, other = backend.offset_store("src"), backend.offset_store("src-other")
    await first.load()
    await other.load()
    try:
        await first.write([({"task": 0}, {"next": 10}), ({"task": 1}, {"next": 11})])
        await first.write([({"task": 0}, {"next": 20}), ({"task": 1}, None)])
        await other.write([({"task": 0}, {"next": 99})])
        assert first.offset({"task": 0}) == {"next": 20}
        assert first.offset({"task": 1}) is None
    finally:
        await first.close()
        await other.close()

    replayed = backend.restarted().offset_store("src")
    await replayed.load()
    try:
        assert replayed.offsets([{"task": 0}, {"task": 1}]) == [
            ({"task": 0}, {"next": 20}),
            ({"task": 1}, None),
        ]
    finally:
        await replayed.close()


@pytest.mark.kafka
async def test_a_write_decided_on_a_state_another_replica_changed_is_decided_again(
    settings_for: Callable[..., Settings],
) -> None:
    """Two replicas' stores on one configs topic: the one that decided on a state the other
    changed meanwhile is refused by Kafka, reads again, and decides on what the other wrote."""
    runner.quiet_fenced_futures()  # as every service does
    settings = settings_for()
    await ensure_topics(settings)
    mine, theirs = ConfigStore.on_kafka(settings), ConfigStore.on_kafka(settings)
    await mine.start()
    await theirs.start()
    seen: list[set[str]] = []

    async def create_if_free(state: ConfigState) -> list[configlog.Record]:
        seen.append(set(state.connectors))
        if "x" in state.connectors:
            return []  # as a create that finds the name taken: it writes nothing
        if len(seen) == 1:  # the other replica creates "x" while this one is deciding
            await theirs.transact(writing([configlog.connector_configured("x", {"v": "B"}, "b")]))
        return [configlog.connector_configured("x", {"v": "A"}, "a")]

    try:
        state = await mine.transact(create_if_free)
        assert seen == [set(), {"x"}]
        assert (dict(state.connectors["x"]), state.incarnations["x"]) == ({"v": "B"}, "b")
        # The other replica, whose turn this one took back, writes again as transparently.
        updated = await theirs.transact(writing([configlog.target_state("x", Target.PAUSED)]))
        assert updated.target_of("x") is Target.PAUSED
        assert (await mine.current()).target_of("x") is Target.PAUSED
    finally:
        await mine.close()
        await theirs.close()

    replayed = ConfigStore.on_kafka(settings)
    await replayed.start()
    try:
        assert await replayed.current() == updated
    finally:
        await replayed.close()


_APPEND_FOREVER = """
import asyncio, sys
from pathlib import Path
from headrace.core.storage.filelog import FileTopic, file_logs

async def main() -> None:
    log = file_logs(FileTopic("offsets", Path(sys.argv[1])))(lambda record: None)
    await log.start()
    n = 0
    while True:
        n += 1
        await log.append_many([(f"partition-{n % 50}", b'{"position": %d}' % n)])
        print(n, flush=True)

asyncio.run(main())
"""


@pytest.mark.parametrize("kill", range(5))  # each kill lands somewhere else in a write
def test_a_process_killed_while_it_writes_leaves_its_file_whole(tmp_path: Path, kill: int) -> None:
    """SIGKILL lands in the middle of some write: the file read after it is the one before that
    write or the one after, never a torn one."""
    path = tmp_path / "offsets.json"
    with subprocess.Popen(
        [sys.executable, "-c", _APPEND_FOREVER, str(path)], stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout is not None
            written = 0
            while written < 300:  # enough writes that the kill finds one under way
                written = int(writer.stdout.readline())
        finally:
            writer.kill()
    records = FileTopic("offsets", path).records
    assert len(records) == 50
    last = max(json.loads(r.value or b"")["position"] for r in records)
    assert last >= written  # every write acknowledged before the kill is there
