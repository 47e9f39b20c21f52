"""End to end: Kafka Connect's own Java connectors, created through the REST API with the JSON a
Connect user sends, run by the stack's workers beside a JVM of their own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pyarrow.dataset as ds
import pytest
from aiokafka import AIOKafkaProducer

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests.postgres import Postgres
from tests.support import (
    JAVA_RECORDING,
    Rest,
    committed,
    consume,
    lifecycle,
    log_events,
    wait_for,
)

pytestmark = [pytest.mark.kafka]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
TRANSFORMATION = "headrace.testing.RecordedBy"  # in the recording source's jar
MIRROR = "org.apache.kafka.connect.mirror."
MIRROR_SOURCE = MIRROR + "MirrorSourceConnector"
MIRROR_CHECKPOINT = MIRROR + "MirrorCheckpointConnector"
MIRROR_HEARTBEAT = MIRROR + "MirrorHeartbeatConnector"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
STRINGS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


def running(client: ConfigClient, name: str) -> dict[str, Any] | None:
    status = status_json(client.status(name))
    units = [status["connector"], *status["tasks"]]
    if status["tasks"] and all(u["state"] == "RUNNING" for u in units):
        return status
    return None


def jvms(stack: Stack, worker: str) -> Counter[str]:
    """How many JVM plugin hosts the worker runs, by location."""
    pid = stack.pid(worker)
    assert pid is not None
    found: Counter[str] = Counter()
    for process in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            line = process.cmdline()
            if "--location" in line and Path(line[0]).name == "java":
                found[line[line.index("--location") + 1]] += 1
    return found


def test_two_versions_of_connect_file_run_side_by_side_each_on_the_one_it_pinned(
    stack: Stack, tmp_path: Path
) -> None:
    """FileStream's 3.9.1 source and sink, and its 4.3.0 sink, on one worker: each version on
    the one its connector pinned, and each version's connectors in one JVM of its own (the
    source and the sink of 3.9.1 ran a JVM each)."""
    lines = [f"row {i}" for i in range(300)]
    (tmp_path / "in.txt").write_text("".join(f"{line}\n" for line in lines))
    topic = f"{tmp_path.name}-lines"
    rest = Rest(f"http://{stack.settings.rest_addr}")
    # Worker-1 alone runs everything: both versions of one class in one worker.
    stack.stop("worker-2")
    try:
        status, _ = rest(
            "POST",
            "/connectors",
            {
                "name": "file-in",
                "config": {
                    "connector.class": SOURCE,
                    "connector.plugin.version": "3.9.1",
                    "tasks.max": "1",
                    "file": str(tmp_path / "in.txt"),
                    "topic": topic,
                    **STRINGS,
                },
            },
        )
        assert status == 201
        for name, version in (("file-out", "[4.0,)"), ("file-out-old", "3.9.1")):
            status, _ = rest(
                "PUT",
                f"/connectors/{name}/config",
                {
                    "connector.class": SINK,
                    "connector.plugin.version": version,
                    "tasks.max": "1",
                    "file": str(tmp_path / f"{name}.txt"),
                    "topics": topic,
                    **STRINGS,
                },
            )
            assert status == 201
        names = ("file-in", "file-out", "file-out-old")
        with ConfigClient(stack.settings.config_addr, stack.settings) as client:
            source, sink, old_sink = (
                wait_for(f"{n} running", partial(running, client, n), timeout=90) for n in names
            )
            for out in ("file-out.txt", "file-out-old.txt"):

                def written(out: str = out) -> list[str] | None:
                    path = tmp_path / out
                    found = path.read_text().splitlines() if path.exists() else []
                    return found if len(found) >= len(lines) else None

                assert wait_for(f"every line in {out}", written, timeout=90) == lines
            by_location = jvms(stack, "worker-1")
            for name in names:
                client.delete(name)
    finally:
        stack.start("worker-2")
    for unit in (source["connector"], *source["tasks"], old_sink["connector"], *old_sink["tasks"]):
        assert (unit["worker_id"], unit["version"]) == ("worker-1", "3.9.1")
    for unit in (sink["connector"], *sink["tasks"]):
        assert (unit["worker_id"], unit["version"]) == ("worker-1", "4.3.0")
    file_jvms = {where: n for where, n in by_location.items() if "connect-file" in where}
    assert sorted(file_jvms.values()) == [1, 1], by_location
    assert sorted(Path(where).name for where in file_jvms) == ["3.9.1", "4.3.0"], by_location


def test_a_java_connector_is_validated_with_its_own_config_def(stack: Stack) -> None:
    rest = Rest(f"http://{stack.settings.rest_addr}")
    status, answer = rest(
        "PUT",
        f"/connector-plugins/{SOURCE}/config/validate",
        {
            "connector.class": SOURCE,
            "tasks.max": "1",
            "batch.size": "many",
            "transforms": "route,cast,nope",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "(.*)",
            "transforms.route.replacement": "copy-$1",
            "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
            "transforms.cast.spec": "int128",
            "transforms.nope.type": "com.example.NoSuchTransform",
        },
    )
    assert status == 200
    errors = {c["value"]["name"]: c["value"]["errors"] for c in answer["configs"]}
    types = {c["definition"]["name"]: c["definition"]["type"] for c in answer["configs"]}
    assert "INT" in " ".join(errors["batch.size"])  # its own ConfigDef: an INT
    assert errors["topic"]  # and requires a topic
    # Connect's transformations are made in the JVM, with Connect's classes: one that does not
    # exist there is the error of the key that names it.
    assert not errors.get("transforms.route.type")
    assert "com.example.NoSuchTransform" in " ".join(errors["transforms.nope.type"])
    # Each one's own keys are in the answer under its prefix, as Connect gives them, each
    # checked by the transformation's own definition.
    assert types["transforms.route.regex"] == "STRING"
    assert errors["transforms.route.regex"] == errors["transforms.route.replacement"] == []
    assert "int128" in " ".join(errors["transforms.cast.spec"])
    assert answer["error_count"] >= 4
    status, keys = rest("GET", f"/connector-plugins/{SOURCE}/config")
    assert status == 200
    assert {"file", "topic", "batch.size"} <= {k["name"] for k in keys}


def test_a_converter_s_own_config_providers_are_refused_and_read_nothing(stack: Stack) -> None:
    """Found by the second perimeter review (reproduced on the stack ``make run`` starts): a
    validation, which needs only the ``read`` role, of Kafka's FileStreamSource with config
    providers under the converter's prefix answered the validating process's whole PATH."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    config = {
        "connector.class": SOURCE,
        "topic": "t",
        **STRINGS,
        "value.converter.config.providers": "_e",
        "value.converter.config.providers._e.class": (
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
        ),
        "value.converter.converter.encoding": "${_e:PATH}",
    }
    status, answer = rest("PUT", f"/connector-plugins/{SOURCE}/config/validate", config)
    assert status == 200
    errors = {c["value"]["name"]: " ".join(c["value"]["errors"]) for c in answer["configs"]}
    assert "(CVE-2024-31141)" in errors["value.converter.config.providers"]
    assert "no config provider '_e'" in errors["value.converter.converter.encoding"]
    said = json.dumps(answer)
    assert "/bin" not in said and os.environ["PATH"] not in said
    status, refused = rest("POST", "/connectors", {"name": "pry", "config": config})
    assert status == 400 and "CVE-2024-31141" in json.dumps(refused)


@pytest.mark.parametrize(
    ("plugin", "key", "value", "says"),
    [
        (SOURCE, "file", "/etc/passwd", "is outside the allowed folders"),
        (SINK, "file", "/tmp/headrace-elsewhere.txt", "is outside the allowed folders"),
        (SOURCE, "connection.url", "http://169.254.169.254/latest", "a cloud metadata service"),
        (SINK, "source.cluster.bootstrap.servers", "[fe80::1]:9092", "link-local"),
        (SOURCE, "database.hostname", "metadata.google.internal", "cloud metadata service"),
    ],
)
def test_a_java_connector_is_held_to_the_file_roots_and_the_address_guard(
    stack: Stack, plugin: str, key: str, value: str, says: str
) -> None:
    """Found by the second perimeter review (reproduced: 201 for Kafka's FileStreamSource on
    /etc/passwd, and for its FileStreamSink on a file under /tmp): only headrace's own
    connectors held their files and addresses to the operator's bounds."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    config = {
        "connector.class": plugin,
        "tasks.max": "1",
        **({"topic": "t"} if plugin == SOURCE else {"topics": "t"}),
        **STRINGS,
        key: value,
    }
    status, answer = rest("PUT", f"/connector-plugins/{plugin}/config/validate", config)
    assert status == 200
    errors = {c["value"]["name"]: " ".join(c["value"]["errors"]) for c in answer["configs"]}
    assert says in errors[key], errors
    status, refused = rest("POST", "/connectors", {"name": "held", "config": config})
    assert status == 400 and says in refused["message"], refused
    assert rest("GET", "/connectors/held")[0] == 404


def test_a_java_connectors_config_hides_only_what_its_definitions_call_secret(
    stack: Stack, tmp_path: Path
) -> None:
    rest = Rest(f"http://{stack.settings.rest_addr}")
    config = {
        "connector.class": JAVA_RECORDING,
        "tasks.max": "1",
        "path": str(tmp_path / "hidden"),
        "topic": "hidden-keys",
        "secret": "s3cret-value",
        "transforms": "route",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "copy-$1",
    }
    created = {"name": "java-hidden", "config": config, "initial_state": "STOPPED"}
    status, _ = rest("POST", "/connectors", created)
    assert status == 201
    try:
        status, shown = rest("GET", "/connectors/java-hidden/config")
        assert status == 200
        # The connector's ConfigDef types secret PASSWORD; RegexRouter's keys are plain.
        assert shown["secret"] == "[hidden]"
        assert {k: shown[k] for k in config if k != "secret"} == {
            k: v for k, v in config.items() if k != "secret"
        }
    finally:
        assert rest("DELETE", "/connectors/java-hidden")[0] == 204


def test_an_embedded_client_s_password_is_hidden_whatever_its_prefix(
    stack: Stack, tmp_path: Path
) -> None:
    """Found by the second perimeter review (reproduced): Debezium's schema history client's
    ``sasl.jaas.config`` and MirrorMaker's cluster passwords came back in clear: only the
    ``*.override.*`` client keys were hidden."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    passwords = {
        "schema.history.internal.producer.sasl.jaas.config": (
            'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
            'password="jaas-pw-d1f7";'
        ),
        "source.cluster.ssl.keystore.password": "keystore-pw-9a2c",
        "target.cluster.ssl.truststore.password": "truststore-pw-5b8e",
    }
    config = {
        "connector.class": JAVA_RECORDING,
        "path": str(tmp_path / "clients"),
        **passwords,
        "source.cluster.bootstrap.servers": "elsewhere:9092",
    }
    status, answer = rest("PUT", f"/connector-plugins/{JAVA_RECORDING}/config/validate", config)
    assert status == 200
    created = {"name": "java-clients", "config": config, "initial_state": "STOPPED"}
    assert rest("POST", "/connectors", created)[0] == 201
    try:
        status, shown = rest("GET", "/connectors/java-clients/config")
        assert status == 200
        assert {k: shown[k] for k in passwords} == dict.fromkeys(passwords, "[hidden]")
        assert shown["source.cluster.bootstrap.servers"] == "elsewhere:9092"
        said = json.dumps([answer, shown, rest("GET", "/connectors/java-clients")[1]])
        assert [k for k, v in passwords.items() if v in said or "pw-" in said] == []
    finally:
        assert rest("DELETE", "/connectors/java-clients")[0] == 204


def test_a_java_source_killed_mid_stream_writes_each_record_exactly_once(
    stack: Stack, tmp_path: Path
) -> None:
    topic, per_task = f"{tmp_path.name}-once", 1500
    kafka = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(kafka, topic, 2))
    config = {
        "connector.class": JAVA_RECORDING,
        "tasks.max": "2",
        "path": str(tmp_path / "once"),
        "topic": topic,
        "records": str(per_task),
        "batch.size": "10",
        "poll.ms": "50",  # about 200 records a second a task: the crash comes mid-stream
        "exactly.once.support": "required",
        **STRINGS,
    }

    def written() -> list[tuple[int, int]]:
        values = (json.loads(r.value or b"") for r in asyncio.run(committed(kafka, topic)))
        return [(v["task"], v["n"]) for v in values]

    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("java-once", config)
        try:
            status = wait_for("java-once running", lambda: running(client, "java-once"), 90)
            wait_for("records flowing", lambda: len(written()) > per_task // 5, timeout=90)
            victim = status["tasks"][0]["worker_id"]
            pid = stack.pid(victim)
            assert pid is not None
            os.killpg(pid, signal.SIGKILL)  # the worker, its plugin processes and their JVMs
            stack.stop(victim)
            assert len(written()) < 2 * per_task, "the source finished before the crash"
            stack.start(victim)
            found = wait_for(
                "every record committed",
                lambda: w if len(w := written()) >= 2 * per_task else None,
                timeout=120,
            )
        finally:
            client.delete("java-once")
    counts = Counter(found)
    assert set(counts) == {(t, n) for t in (0, 1) for n in range(per_task)}  # none lost
    assert max(counts.values()) == 1  # none twice


def test_the_deletion_stop_reaches_a_java_connector_once_through_a_worker_crash(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "java-doomed"
    config = {
        "connector.class": JAVA_RECORDING,
        "tasks.max": "2",
        "path": str(out),
        "topic": f"{tmp_path.name}-out",
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("java-doomed", config)
        placed = wait_for(
            "java-doomed on both workers",
            lambda: (
                (s := running(client, "java-doomed"))
                and len(s["tasks"]) == 2
                and {u["worker_id"] for u in (s["connector"], *s["tasks"])}
                == {"worker-1", "worker-2"}
                and s
            ),
            timeout=90,
        )
        assert placed
        pid = stack.pid("worker-2")
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)  # the worker, its plugin processes and their JVMs
        stack.stop("worker-2")
        client.delete("java-doomed")
        stack.start("worker-2")

        def deleted() -> Counter[tuple[str, Any]]:
            return Counter(
                (e["unit"], e.get("task"))
                for e in lifecycle(out)
                if e["event"] == "stop" and e["deleted"]
            )

        wait_for("every unit stopped as deleted", lambda: sum(deleted().values()) >= 3, timeout=90)
        assert deleted() == {("connector", None): 1, ("task", 0): 1, ("task", 1): 1}
        assert all(e.get("runtime") == "java" for e in lifecycle(out))
        wait_for(
            "worker-2 cleaned its part up",
            lambda: log_events(stack.log_dir, "deletion_cleaned_up", worker="worker-2"),
        )


def test_a_java_plugins_own_transformation_is_listed_and_runs_in_its_connector(
    stack: Stack, tmp_path: Path
) -> None:
    """The recording source's jar holds a transformation: the plugin list shows it with its
    version (not among the connectors), and a connector of that jar that names it runs it."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    status, everything = rest("GET", "/connector-plugins?connectorsOnly=false")
    assert status == 200
    assert {"class": TRANSFORMATION, "type": "transformation", "version": "1.0.0"} in everything
    status, connectors = rest("GET", "/connector-plugins")
    assert status == 200
    assert TRANSFORMATION not in {p["class"] for p in connectors}
    topic = f"{tmp_path.name}-tagged"
    kafka = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(kafka, topic, 1))
    config = {
        "connector.class": JAVA_RECORDING,
        "tasks.max": "1",
        "path": str(tmp_path / "tagged"),
        "topic": topic,
        "records": "20",
        "transforms": "tag",
        "transforms.tag.type": TRANSFORMATION,
        "transforms.tag.by": "the jar's own transformation",
        **STRINGS,
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("java-tagged", config)
        try:
            records = wait_for(
                "the 20 records",
                lambda: r if len(r := asyncio.run(committed(kafka, topic))) >= 20 else None,
                timeout=90,
            )
        finally:
            client.delete("java-tagged")
    assert [dict(r.headers) for r in records] == [
        {"recorded-by": b"the jar's own transformation"}
    ] * 20


def test_mirrormaker_s_three_connectors_are_created_as_connect_tools_send_them(
    stack: Stack, tmp_path: Path
) -> None:
    """MirrorMaker 2's source, checkpoint and heartbeat connectors, each created by ``POST
    /connectors`` with its name beside its config, as every Connect tool sends it (their
    ConfigDefs require ``name``: found refused as missing), between two clusters that are the
    suite's broker under two aliases. The source copies a topic, the heartbeat connector
    beats."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    kafka = stack.settings.bootstrap_servers
    tag = tmp_path.name[-8:].replace("_", "").lower()
    source_alias, target_alias = f"s{tag}", f"t{tag}"
    topic, n = f"{tmp_path.name}-orders", 50
    asyncio.run(ensure_topic(kafka, topic, 1))
    asyncio.run(produce(kafka, topic, [f"order {i}".encode() for i in range(n)]))

    common = {
        "source.cluster.alias": source_alias,
        "target.cluster.alias": target_alias,
        "source.cluster.bootstrap.servers": kafka,
        "target.cluster.bootstrap.servers": kafka,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "tasks.max": "1",
    }
    connectors = {
        f"mm-source-{tag}": {
            "connector.class": MIRROR_SOURCE,
            "topics": topic,
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            "offset-syncs.topic.location": "target",
            "sync.topic.acls.enabled": "false",
            "sync.topic.configs.enabled": "false",
            "refresh.topics.interval.seconds": "1",
        },
        f"mm-checkpoint-{tag}": {
            "connector.class": MIRROR_CHECKPOINT,
            "checkpoints.topic.replication.factor": "1",
            "emit.checkpoints.interval.seconds": "1",
            "sync.group.offsets.enabled": "false",
        },
        f"mm-heartbeat-{tag}": {
            "connector.class": MIRROR_HEARTBEAT,
            "heartbeats.topic.replication.factor": "1",
            "emit.heartbeats.interval.seconds": "1",
        },
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        for name, config in connectors.items():
            status, created = rest(
                "POST", "/connectors", {"name": name, "config": {**common, **config}}
            )
            assert status == 201, created
        source, checkpoint, heartbeat = connectors
        wait_for("the source running", lambda: running(client, source), timeout=120)
        wait_for("the heartbeats running", lambda: running(client, heartbeat), timeout=120)
        wait_for(
            "the checkpoints running",
            lambda: status_json(client.status(checkpoint))["connector"]["state"] == "RUNNING",
            timeout=120,
        )
        copied = asyncio.run(consume(kafka, f"{source_alias}.{topic}", n, within=120))
        assert sorted(r.value for r in copied) == sorted(f"order {i}".encode() for i in range(n))
        beats = asyncio.run(consume(kafka, "heartbeats", 1, within=120))
        assert any(source_alias.encode() in (r.key or b"") for r in beats), beats[:3]
        for name in connectors:
            assert rest("DELETE", f"/connectors/{name}")[0] == 204


async def produce(kafka: str, topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value)
        await producer.flush()
    finally:
        await producer.stop()


def test_debezium_changes_flattened_by_its_own_transformation_land_in_parquet(
    stack: Stack, postgres: Postgres, tmp_path: Path
) -> None:
    """Debezium's PostgreSQL connector with its ExtractNewRecordState transformation, the way
    its users run it, into headrace's Parquet sink and into Debezium's own JDBC sink (a copy of
    the table), all run by the stack's workers: each row of the table, inserted and then
    updated, is a row in Parquet with its columns, and the copy ends as the table does."""
    tag = tmp_path.name[-8:].replace("_", "").lower()
    table, prefix = f"customers_{tag}", f"cdc{tag}"
    with postgres.connect() as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text, spent int)")
        conn.execute(f"INSERT INTO {table} VALUES (1, 'Ada', 10), (2, 'Grace', 20)")
    json_with_schemas = {
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
    }
    source = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": postgres.host,
        "database.port": str(postgres.port),
        "database.user": postgres.user,
        "database.password": "unused",
        "database.dbname": postgres.database,
        "topic.prefix": prefix,
        "table.include.list": f"public.{table}",
        "plugin.name": "pgoutput",
        "slot.name": f"slot_{tag}",
        "publication.name": f"pub_{tag}",
        "publication.autocreate.mode": "filtered",
        "slot.drop.on.stop": "true",
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        **json_with_schemas,
    }
    out = tmp_path / "parquet"
    sink = {
        "connector.class": "headrace_parquet.ParquetSinkConnector",
        "tasks.max": "1",
        "topics": f"{prefix}.public.{table}",
        "path": str(out),
        **json_with_schemas,
    }
    copy = {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        "topics": f"{prefix}.public.{table}",
        "connection.url": f"jdbc:postgresql://{postgres.host}:{postgres.port}/{postgres.database}",
        "connection.username": postgres.user,
        "connection.password": "unused",
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "schema.evolution": "basic",
        "table.name.format": f"{table}_copy",
        **json_with_schemas,
    }
    rest = Rest(f"http://{stack.settings.rest_addr}")
    names = (f"cdc-{tag}", f"lake-{tag}", f"copy-{tag}")
    for name, config in zip(names, (source, sink, copy), strict=True):
        # The first validation of a plugin starts its JVM, which loads the whole location
        # (Debezium's JDBC sink: 39 jars, Hibernate among them): as long as Connect's own REST
        # API allows a request (90 s).
        body = {"name": name, "config": config}
        status, created = rest("POST", "/connectors", body, timeout=90)
        assert status == 201, created

    def rows() -> list[dict[str, Any]]:
        if not out.exists():
            return []
        table_read = ds.dataset(out, format="parquet", ignore_prefixes=[".", "_"]).to_table()
        if table_read.num_rows == 0:
            return []  # the sink's folder is there before its first file
        return sorted(table_read.select(["id", "name", "spent"]).to_pylist(), key=str)

    wait_for("the snapshot's rows in Parquet", lambda: len(rows()) >= 2, timeout=180)
    with postgres.connect() as conn:
        conn.execute(f"UPDATE {table} SET spent = 15 WHERE id = 1")
    expected = [
        {"id": 1, "name": "Ada", "spent": 10},
        {"id": 1, "name": "Ada", "spent": 15},
        {"id": 2, "name": "Grace", "spent": 20},
    ]
    wait_for("the update's row in Parquet", lambda: len(rows()) >= 3, timeout=120)
    assert rows() == sorted(expected, key=str)

    def copied() -> list[tuple[Any, ...]] | None:
        with postgres.connect() as conn:
            found = conn.execute(
                "SELECT 1 FROM information_schema.tables WHERE table_name = %s", (f"{table}_copy",)
            ).fetchone()
            if found is None:
                return None
            return conn.execute(f"SELECT id, name, spent FROM {table}_copy ORDER BY id").fetchall()

    ended = [(1, "Ada", 15), (2, "Grace", 20)]
    assert wait_for("the copy as the table ends", lambda: copied() == ended, timeout=180)
    for name in names:
        assert rest("DELETE", f"/connectors/{name}")[0] == 204
