"""The config service as a real process on the real broker: replay after SIGKILL, and bad input
refused with the right gRPC status while nothing changes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.clients.config import ConfigClient
from headrace.clients.taskconfigs import TaskConfigsClient
from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState, SessionKey, apply
from headrace.core.model.offsets import sink_group_id
from headrace.core.observability import log
from headrace.core.security import sessionkey
from headrace.core.settings import Settings
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topiclog import LogRecord, kafka_logs
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from headrace.v1 import config_pb2, internal_pb2_grpc
from tests.integration.conftest import manifest_plugins
from tests.support import Rest, install_manifest

pytestmark = pytest.mark.kafka


CONFIGS = {
    "gen-1": {"connector.class": "Gen", "tasks.max": "2", "topic": "t1"},
    "lake-a": {
        "connector.class": "com.example.LakeConnector",
        "topics": "t1",
        "connector.plugin.version": "1.0.0",
    },
    "with-dashes-2": {"connector.class": "LakeConnector", "topics.regex": "t.*", "tasks.max": "3"},
}


def snapshot(client: ConfigClient) -> dict[str, Any]:
    """Everything the service answers about every connector: config, task configs, type and
    target state, and its connectors' plugin list."""
    return {
        "connectors": {n: client.get(n) for n in client.names()},
        "plugins": client.plugins(connectors_only=False),
    }


async def configs_now(settings: Settings) -> ConfigState:
    """The configs topic folded as every service folds it: what a worker's assignment says of
    a connector (its incarnation, its config's version) comes from this."""
    state = ConfigState()

    def fold(record: LogRecord) -> None:
        nonlocal state
        event = configlog.decode(record.key, record.value, record.offset)
        if event is not None:
            state = apply(state, event)

    log_ = kafka_logs(settings, "configs")(fold)
    await log_.start(writer=False, follow=False)
    await log_.close()
    return state


async def put_tasks(settings: Settings, name: str, tasks: list[dict[str, str]]) -> None:
    """Task configs, put as the worker running the connector would."""
    state = await configs_now(settings)
    worker_side = TaskConfigsClient(settings, log.get())
    worker_side.start()
    try:
        incarnation, version = state.incarnations[name], state.config_versions[name]
        await worker_side.put(name, tasks, incarnation, version)
    finally:
        await worker_side.close()


def test_a_restart_after_sigkill_rebuilds_the_identical_state(
    config_service: tuple[Stack, Settings],
) -> None:
    stack, settings = config_service
    with ConfigClient(settings.config_addr, settings) as client:
        for name, config in CONFIGS.items():
            created = client.create(name, config)
            assert dict(created.config) == {**config, "name": name}  # read back before answering
        asyncio.run(put_tasks(settings, "gen-1", [{"task.id": "0"}, {"task.id": "1"}]))
        client.pause("gen-1")
        client.stop("lake-a")
        client.patch("with-dashes-2", {"tasks.max": "2"})
        client.create("doomed", {"connector.class": "Gen"})
        client.delete("doomed")
        client.create("reborn", {"connector.class": "Gen", "label": "old"})
        client.delete("reborn")
        client.create("reborn", {"connector.class": "Gen", "label": "new"})
        before = snapshot(client)
    assert sorted(before["connectors"]) == sorted([*CONFIGS, "reborn"])
    assert before["connectors"]["gen-1"].target_state == "PAUSED"
    assert len(before["connectors"]["gen-1"].tasks) == 2

    stack.stop("config", sig=signal.SIGKILL)
    stack.start("config")

    with ConfigClient(settings.config_addr, settings) as client:
        assert snapshot(client) == before
        with pytest.raises(grpc.RpcError) as info:
            client.get("doomed")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


BAD = [
    (
        "unknown plugin",
        "x",
        {"connector.class": "NoSuchConnector"},
        grpc.StatusCode.NOT_FOUND,
        "NoSuchConnector",
    ),
    (
        "unknown version",
        "x",
        {"connector.class": "Lake", "topics": "t", "connector.plugin.version": "9.9"},
        grpc.StatusCode.NOT_FOUND,
        "2.0.0",
    ),
    ("no class", "x", {"tasks.max": "1"}, grpc.StatusCode.INVALID_ARGUMENT, "connector.class"),
    (
        "tasks.max 0",
        "x",
        {"connector.class": "Gen", "tasks.max": "0"},
        grpc.StatusCode.INVALID_ARGUMENT,
        "tasks.max",
    ),
    (
        "tasks.max past the bound",
        "x",
        {"connector.class": "Gen", "tasks.max": "1000000"},
        grpc.StatusCode.INVALID_ARGUMENT,
        "tasks.max: must be at most 1000",
    ),
    (
        "reversed name",
        "a\u202eb",
        {"connector.class": "Gen"},
        grpc.StatusCode.INVALID_ARGUMENT,
        "U+202E",
    ),
    (
        "long name",
        "n" * 10_000,
        {"connector.class": "Gen"},
        grpc.StatusCode.INVALID_ARGUMENT,
        "at most 249",
    ),
    (
        "duplicate",
        "existing",
        {"connector.class": "Gen"},
        grpc.StatusCode.ALREADY_EXISTS,
        "existing",
    ),
]


def test_bad_input_is_refused_and_changes_nothing(config_service: tuple[Stack, Settings]) -> None:
    _, settings = config_service
    with ConfigClient(settings.config_addr, settings) as client:
        client.create("existing", {"connector.class": "Gen", "topic": "keep"})
        for label, name, config, code, mentioned in BAD:
            with pytest.raises(grpc.RpcError) as info:
                client.create(name, config)
            assert info.value.code() == code, label
            assert mentioned in info.value.details(), label
        assert client.names() == ["existing"]
        assert dict(client.get("existing").config)["topic"] == "keep"
        # Too large to store: refused by its size before a key of it is checked anywhere.
        huge = {"connector.class": "Gen", **{f"k{i}": "v" * 1000 for i in range(2000)}}
        with pytest.raises(grpc.RpcError) as info:
            client.validate("Gen", huge)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "config: its keys and values take" in info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            client.delete("never-created")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_the_lifecycle_calls_change_the_stored_state_and_survive_replay(
    config_service: tuple[Stack, Settings],
) -> None:
    stack, settings = config_service
    gen = {"connector.class": "Gen", "tasks.max": "2", "topic": "t1"}
    with ConfigClient(settings.config_addr, settings) as client:
        info, created = client.put_config("gen", gen)
        assert created and info.target_state == "RUNNING"
        again, created = client.put_config("gen", {**gen, "topic": "t2"})
        assert not created and again.config["topic"] == "t2"

        patched = client.patch("gen", {"tasks.max": None, "label": "x"})
        assert dict(patched.config) == {
            "connector.class": "Gen",
            "topic": "t2",
            "label": "x",
            "name": "gen",
        }

        client.pause("gen")
        assert client.get("gen").target_state == "PAUSED"
        client.stop("gen")
        assert client.get("gen").target_state == "STOPPED"
        client.create("held", {"connector.class": "Gen"}, initial_state="PAUSED")

        restarted = client.restart("gen", include_tasks=True)
        assert restarted.connector.state == "RESTARTING"  # no tasks: the connector is stopped
        assert list(restarted.tasks) == []
        only_failed = client.restart("gen", include_tasks=True, only_failed=True)
        assert only_failed.connector.state == "UNASSIGNED"  # not failed: not restarted

    stack.stop("config", sig=signal.SIGKILL)
    stack.start("config")

    with ConfigClient(settings.config_addr, settings) as client:
        assert client.get("gen").target_state == "STOPPED"
        assert client.get("held").target_state == "PAUSED"
        client.resume("gen")
        assert client.get("gen").target_state == "RUNNING"
        assert dict(client.get("gen").config)["label"] == "x"


LIFECYCLE_REFUSALS = [
    ("pause", lambda c: c.pause("nope"), grpc.StatusCode.NOT_FOUND, "nope"),
    ("resume", lambda c: c.resume("nope"), grpc.StatusCode.NOT_FOUND, "nope"),
    ("stop", lambda c: c.stop("nope"), grpc.StatusCode.NOT_FOUND, "nope"),
    ("restart", lambda c: c.restart("nope"), grpc.StatusCode.NOT_FOUND, "nope"),
    ("task restart", lambda c: c.restart_task("existing", 0), grpc.StatusCode.NOT_FOUND, "task 0"),
    ("task status", lambda c: c.task_status("existing", 3), grpc.StatusCode.NOT_FOUND, "task 3"),
    ("patch", lambda c: c.patch("nope", {"a": "b"}), grpc.StatusCode.NOT_FOUND, "nope"),
    (
        "patch removing the class",
        lambda c: c.patch("existing", {"connector.class": None}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "connector.class",
    ),
    (
        "bad initial state",
        lambda c: c.create("x", {"connector.class": "Gen"}, initial_state="SLEEPING"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "initial_state",
    ),
    (
        "a 5 MB value",
        lambda c: c.put_config("x", {"connector.class": "Gen", "big": "v" * 5_000_000}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "1000000 bytes",
    ),
]


def test_lifecycle_calls_with_bad_input_are_refused_and_change_nothing(
    config_service: tuple[Stack, Settings],
) -> None:
    _, settings = config_service
    with ConfigClient(settings.config_addr, settings) as client:
        client.create("existing", {"connector.class": "Gen", "topic": "keep"})
        for label, call, code, mentioned in LIFECYCLE_REFUSALS:
            with pytest.raises(grpc.RpcError) as info:
                call(client)
            assert info.value.code() == code, label
            assert mentioned in info.value.details(), label
        assert client.names() == ["existing"]
        kept = client.get("existing")
        assert dict(kept.config) == {"connector.class": "Gen", "topic": "keep", "name": "existing"}
        assert kept.target_state == "RUNNING"


async def seed_offsets(settings: Settings, name: str, topic: str) -> None:
    """Offsets as a running source task and a sink's consumer group would have left them."""
    store = OffsetStore(settings, name)
    await store.load()
    try:
        await store.write([({"task": 0}, {"next": 5})])
    finally:
        await store.close()
    await ensure_topic(settings.bootstrap_servers, topic, 2)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers,
        group_id=sink_group_id(settings.cluster, "lake"),
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        consumer.assign(partitions)
        await consumer.commit({partitions[0]: 7, partitions[1]: 11})
    finally:
        await consumer.stop()


async def source_offsets(settings: Settings, name: str) -> dict[str, Any]:
    """What the cluster's offsets topic holds for a source connector."""
    store = OffsetStore(settings, name)
    await store.load()
    try:
        return dict(store.state)
    finally:
        await store.close()


def test_offsets_are_read_and_changed_only_while_stopped(
    config_service: tuple[Stack, Settings],
) -> None:
    _, settings = config_service
    topic = f"{settings.cluster}-lake-in"
    with ConfigClient(settings.config_addr, settings) as client:
        client.create("gen", {"connector.class": "Gen"})
        client.create("lake", {"connector.class": "Lake", "topics": topic})
        asyncio.run(seed_offsets(settings, "gen", topic))

        assert client.offsets("gen") == [{"partition": {"task": 0}, "offset": {"next": 5}}]

        def sink(partition: int, offset: int | None) -> dict[str, Any]:
            at = None if offset is None else {"kafka_offset": offset}
            return {"partition": {"kafka_topic": topic, "kafka_partition": partition}, "offset": at}

        assert client.offsets("lake") == [sink(0, 7), sink(1, 11)]

        for name in ("gen", "lake"):
            for change in (lambda n: client.alter_offsets(n, [sink(0, 1)]), client.reset_offsets):
                with pytest.raises(grpc.RpcError) as info:
                    change(name)
                assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                assert "STOPPED" in info.value.details()
            client.stop(name)

        client.alter_offsets(
            "gen",
            [
                {"partition": {"task": 0}, "offset": {"next": 9}},
                {"partition": {"task": 1}, "offset": {"next": 1}},
            ],
        )
        assert client.offsets("gen") == [
            {"partition": {"task": 0}, "offset": {"next": 9}},
            {"partition": {"task": 1}, "offset": {"next": 1}},
        ]
        client.alter_offsets("gen", [{"partition": {"task": 1}, "offset": None}])
        assert client.offsets("gen") == [{"partition": {"task": 0}, "offset": {"next": 9}}]
        client.reset_offsets("gen")
        assert client.offsets("gen") == []

        client.alter_offsets("lake", [sink(0, 2), sink(1, None)])
        assert client.offsets("lake") == [sink(0, 2)]
        with pytest.raises(grpc.RpcError) as info:
            client.alter_offsets("lake", [{"partition": {"kafka_topic": topic}, "offset": None}])
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "kafka_partition" in info.value.details()
        assert client.offsets("lake") == [sink(0, 2)]
        client.reset_offsets("lake")
        assert client.offsets("lake") == []

        # A source with its own offsets topic (KIP-618) has them read and changed there.
        own = f"{settings.cluster}-own-offsets"
        client.create("own", {"connector.class": "Gen", "offsets.storage.topic": own})
        client.stop("own")
        client.alter_offsets("own", [{"partition": {"task": 0}, "offset": {"next": 3}}])
        assert client.offsets("own") == [{"partition": {"task": 0}, "offset": {"next": 3}}]
        assert asyncio.run(source_offsets(settings, "own")) == {}  # not the cluster's topic


def test_a_sink_s_offsets_are_those_of_the_consumer_group_its_config_names(
    settings_for: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = replace(
        settings_for(manifest_plugins(tmp_path / "plugins")), client_override_policy="All"
    )
    topic, group = f"{settings.cluster}-in", f"connect-{settings.cluster}"
    stack = Stack(settings)
    stack.start("config")
    try:
        with ConfigClient(settings.config_addr, settings) as client:
            config = {"connector.class": "Lake", "topics": topic}
            client.create("lake", {**config, "consumer.override.group.id": group})
            asyncio.run(commit(settings.bootstrap_servers, group, topic, {0: 7, 1: 11}))
            at = [(o["partition"]["kafka_partition"], o["offset"]) for o in client.offsets("lake")]
            assert at == [(0, {"kafka_offset": 7}), (1, {"kafka_offset": 11})]
            client.stop("lake")
            client.reset_offsets("lake")
            assert client.offsets("lake") == []
    finally:
        stack.down()


async def commit(bootstrap: str, group: str, topic: str, offsets: Mapping[int, int]) -> None:
    """Commits ``offsets`` (by partition of ``topic``) in ``group``, as a consumer would."""
    await ensure_topic(bootstrap, topic, len(offsets))
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in offsets])
        await consumer.commit({TopicPartition(topic, p): o for p, o in offsets.items()})
    finally:
        await consumer.stop()


def test_task_configs_are_taken_only_from_a_caller_with_the_session_key(
    config_service: tuple[Stack, Settings],
) -> None:
    _, settings = config_service
    request = config_pb2.PutTaskConfigsRequest(
        connector="signed", tasks=[config_pb2.TaskInfo(task=0, config={"t": "0"})]
    )
    body, now = request.SerializeToString(deterministic=True), sessionkey.now_ms()
    guessed = sessionkey.sign(SessionKey(b"guessed".ljust(32), now), body, now)
    with ConfigClient(settings.config_addr, settings) as client:
        client.create("signed", {"connector.class": "Gen", "topic": "t1"})
        with grpc.insecure_channel(settings.config_addr) as channel:
            stub = internal_pb2_grpc.TaskConfigServiceStub(channel)
            for metadata, why in (((), "not signed"), (guessed, "matches none")):
                with pytest.raises(grpc.RpcError) as info:
                    stub.PutTaskConfigs(request, metadata=metadata)
                assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
                assert why in str(info.value.details())
        assert list(client.get("signed").tasks) == []  # nothing was written

        asyncio.run(put_tasks(settings, "signed", [{"t": "0"}]))
        assert [dict(t.config) for t in client.get("signed").tasks] == [{"t": "0"}]


def signed_put(
    settings: Settings, name: str, tasks: list[str], incarnation: str, version: int, at: int
) -> Callable[[], Any]:
    """A PutTaskConfigs call as a worker signs it (with the cluster's key, at ``at``): the
    call, to be made once or replayed."""
    key = asyncio.run(configs_now(settings)).session_keys[-1]
    request = config_pb2.PutTaskConfigsRequest(
        connector=name,
        tasks=[config_pb2.TaskInfo(task=i, config={"t": t}) for i, t in enumerate(tasks)],
        incarnation=incarnation,
        config_version=version,
    )
    signature = sessionkey.sign(key, request.SerializeToString(deterministic=True), at)

    def call() -> Any:
        with grpc.insecure_channel(settings.config_addr) as channel:
            stub = internal_pb2_grpc.TaskConfigServiceStub(channel)
            return stub.PutTaskConfigs(request, metadata=signature, timeout=30)

    return call


def test_stale_or_replayed_task_configs_are_refused_and_change_nothing(
    config_service: tuple[Stack, Settings],
) -> None:
    """A late retry from a worker that has lost the connector, or a signed call replayed within
    the signature's minutes, never overwrites newer task configs."""
    _, settings = config_service
    with ConfigClient(settings.config_addr, settings) as client:
        client.create("fresh", {"connector.class": "Gen", "topic": "t1"})
        before = asyncio.run(configs_now(settings))
        incarnation, version = before.incarnations["fresh"], before.config_versions["fresh"]

        def put(tasks: list[str], incarnation: str, version: int, at: int) -> Any:
            return signed_put(settings, "fresh", tasks, incarnation, version, at)

        def refused(call: Callable[[], Any], says: str) -> None:
            with pytest.raises(grpc.RpcError) as info:
                call()
            assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION, info.value
            assert says in str(info.value.details())

        now = sessionkey.now_ms()
        first = put(["a"], incarnation, version, now)
        assert first().changed
        refused(first, "not newer than those stored")  # the same signed call, replayed
        refused(put(["old"], incarnation, version, now - 1000), "not newer than those stored")
        refused(put(["x"], "another-incarnation", version, now + 10), "another incarnation")
        client.patch("fresh", {"topic": "t2"})  # a newer config: a newer version
        refused(put(["late"], incarnation, version, now + 20), f"made from version {version}")
        assert [dict(t.config) for t in client.get("fresh").tasks] == [{"t": "a"}]
        newer = asyncio.run(configs_now(settings)).config_versions["fresh"]
        assert put(["b"], incarnation, newer, now + 30)().changed
        assert [dict(t.config) for t in client.get("fresh").tasks] == [{"t": "b"}]


def test_a_source_s_dropped_tasks_are_fenced_before_the_smaller_set_is_written(
    config_service: tuple[Stack, Settings],
) -> None:
    """KIP-618: a task the connector no longer has, still running somewhere (a zombie) with a
    transaction open, can commit nothing once the smaller task set is written."""
    _, settings = config_service
    with ConfigClient(settings.config_addr, settings) as client:
        client.create("shrink", {"connector.class": "Gen", "topic": "t1"})
        state = asyncio.run(configs_now(settings))
        incarnation, version = state.incarnations["shrink"], state.config_versions["shrink"]
        now = sessionkey.now_ms()
        assert signed_put(settings, "shrink", ["0", "1"], incarnation, version, now)().changed
        shrink = signed_put(settings, "shrink", ["0"], incarnation, version, now + 10)

        async def zombie_then_shrink() -> BaseException | None:
            topic = f"{settings.cluster}-zombie"
            await ensure_topic(settings.bootstrap_servers, topic, 1)
            zombie = AIOKafkaProducer(
                bootstrap_servers=settings.bootstrap_servers,
                transactional_id=f"{settings.cluster}-shrink-1",
            )
            await zombie.start()
            try:
                await zombie.begin_transaction()
                await zombie.send_and_wait(topic, b"written by a zombie")
                assert (await asyncio.to_thread(shrink)).changed
                try:
                    await zombie.commit_transaction()
                except Exception as exc:  # noqa: BLE001 - the refusal is what is checked
                    return exc
                return None
            finally:
                await zombie.stop()

        refused = asyncio.run(zombie_then_shrink())
        assert refused is not None, "the dropped task's zombie committed after the shrink"
        assert type(refused).__name__ in ("ProducerFenced", "InvalidProducerEpoch"), refused
        assert [dict(t.config) for t in client.get("shrink").tasks] == [{"t": "0"}]


def test_broken_plugins_are_listed_with_why_and_refused_and_the_service_starts(
    settings_for: Callable[..., Settings], tmp_path: Path
) -> None:
    plugins = manifest_plugins(tmp_path / "plugins")
    (plugins / "garbled" / "1.0.0").mkdir(parents=True)
    (plugins / "garbled" / "1.0.0" / "manifest.json").write_text("{not json")
    install_manifest(plugins, "Unloadable", "1.0.0", "source")
    module = plugins / "Unloadable" / "1.0.0" / "com" / "example.py"
    module.write_text("raise ImportError('a requirement of this plugin is not installed')\n")
    settings = settings_for(plugins)
    stack = Stack(settings)
    stack.start("config")
    try:
        with ConfigClient(settings.config_addr, settings) as client:
            with pytest.raises(grpc.RpcError) as info:
                client.create("x", {"connector.class": "Unloadable"})
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "could not be loaded" in str(info.value.details())
            assert "a requirement of this plugin is not installed" in str(info.value.details())
            errors = {p.class_name: p.error for p in client.plugins() if p.error}
            assert "unreadable manifest" in errors[str(plugins / "garbled" / "1.0.0")]
            assert "a requirement of this plugin" in errors["com.example.UnloadableConnector"]
            assert {p.class_name for p in client.plugins() if not p.error} == {
                "com.example.GenConnector",
                "com.example.LakeConnector",
            }
            assert client.names() == []
        with urllib.request.urlopen(f"http://{settings.rest_addr}/connector-plugins") as answer:
            listed = {p["class"] for p in json.load(answer)}
        assert listed == {"com.example.GenConnector", "com.example.LakeConnector"}
    finally:
        stack.down()


def errors_by_key(infos: Any) -> dict[str, list[str]]:
    return {c.value.name: list(c.value.errors) for c in infos.configs if c.value.errors}


def test_components_from_the_plugin_path_are_listed_pinned_and_checked_in_their_process(
    settings_for: Callable[..., Settings], tmp_path: Path
) -> None:
    """KIP-891 for converters and transforms: every version is listed, a version key is
    checked against them, and the keys of a transformation only the plugin path has are
    checked by the plugin process that loads it (no plugin code runs in the service)."""
    settings = settings_for()  # the built-in plugins and the test plugins
    stack = Stack(settings)
    try:
        stack.start("config")
        with ConfigClient(settings.config_addr, settings) as client:
            listed = {(p.class_name, p.type, p.version) for p in client.plugins(False)}
            assert {
                ("upper_transform.UpperCase", "transformation", "1.0.0"),
                ("upper_transform.UpperCase", "transformation", "2.0.0"),
                ("reversed_converter.ReversedStringConverter", "converter", "1.0.0"),
            } <= listed
            assert {p.type for p in client.plugins()} == {"source", "sink"}

            config = {
                "name": "upper",
                "connector.class": "RecordingSink",
                "topics": "words",
                "path": str(tmp_path / "out"),
                "transforms": "up",
                "transforms.up.type": "UpperCase",
                "transforms.up.field": "word",
                "value.converter": "ReversedStringConverter",
            }
            assert errors_by_key(client.validate("RecordingSink", config)) == {}
            pinned = {**config, "transforms.up.plugin.version": "[3.0,)"}
            assert errors_by_key(client.validate("RecordingSink", pinned)) == {
                "transforms.up.plugin.version": [
                    "transforms.up.plugin.version: transformation UpperCase has no version "
                    "'[3.0,)' (installed: 1.0.0, 2.0.0)"
                ]
            }
            unknown_key = {**config, "transforms.up.shout": "yes"}
            found = errors_by_key(client.validate("RecordingSink", unknown_key))
            assert list(found) == ["transforms.up.shout"]
            assert "not a key of UpperCase" in found["transforms.up.shout"][0]
            with pytest.raises(grpc.RpcError) as info:
                client.create("upper", unknown_key)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "transforms.up.shout" in (info.value.details() or "")
            assert client.names() == []
            client.create("upper", {**config, "transforms.up.plugin.version": "1.0.0"})
            assert client.names() == ["upper"]
    finally:
        stack.down()


def test_a_components_secret_keys_are_hidden_in_every_answer(
    settings_for: Callable[..., Settings], tmp_path: Path
) -> None:
    """A transformation's and a converter's PASSWORD keys, from the plugin path, are shown
    [hidden] by validate, gRPC Get and REST get and list, as a connector's are; a value that is
    a config provider reference alone is shown as written."""
    settings = dataclasses.replace(
        settings_for(),  # the built-in plugins and the test plugins
        config_providers=("env",),
        config_provider_env_pattern="SEAL_.*",
    )
    secret_values = ("seal-s3cret-value", "sign-s3cret-value")
    config = {
        "connector.class": "RecordingSink",
        "topics": "words",
        "path": str(tmp_path / "out"),
        "transforms": "seal",
        "transforms.seal.type": "SealField",
        "transforms.seal.field": "word",
        "transforms.seal.secret": secret_values[0],
        "value.converter": "SignedStringConverter",
        "value.converter.signing.key": secret_values[1],
        "key.converter": "SignedStringConverter",
        "key.converter.signing.key": "${env:SEAL_KEY}",
    }
    hidden = {
        "transforms.seal.secret": "[hidden]",
        "value.converter.signing.key": "[hidden]",
        "key.converter.signing.key": "${env:SEAL_KEY}",
        "transforms.seal.field": "word",
    }
    stack = Stack(settings)
    try:
        stack.start("config")
        rest = Rest(f"http://{settings.rest_addr}")
        with ConfigClient(settings.config_addr, settings) as client:
            # The transformation's own error, filed under its secret key, shows no value of it.
            unsealed = {k: v for k, v in config.items() if k != "transforms.seal.field"}
            answer = client.validate("RecordingSink", unsealed)
            by_key = {c.value.name: c.value for c in answer.configs}
            assert by_key["transforms.seal.secret"].value == "[hidden]"
            assert "name the field to seal" in by_key["transforms.seal.secret"].errors[0]
            text = repr(answer)  # every field the service answered
            assert not [s for s in secret_values if s in text]

            client.create("sealed", config)
            got = dict(client.get("sealed").config)
            assert {k: got[k] for k in hidden} == hidden
            status, body = rest("GET", "/connectors/sealed")
            assert status == 200 and {k: body["config"][k] for k in hidden} == hidden
            status, listed = rest("GET", "/connectors?expand=info")
            shown = listed["sealed"]["info"]["config"]
            assert status == 200 and {k: shown[k] for k in hidden} == hidden
            answers = json.dumps([body, listed]) + repr(client.get("sealed"))
            assert not [s for s in secret_values if s in answers]
    finally:
        stack.down()
