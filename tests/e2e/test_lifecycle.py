"""End to end: what an operator does with a connector, seen in the records that move and in the
lifecycle calls its plugin gets. Pause, stop, restart and update stop with ``deleted=False``;
only a deletion says ``deleted=True``, also for a connector that was paused."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests.support import Rest, committed, json_lines, lifecycle, log_events, stops, wait_for

pytestmark = pytest.mark.kafka


def states(client: ConfigClient, name: str) -> tuple[str, list[str]]:
    status = status_json(client.status(name))
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def all_in(client: ConfigClient, name: str, state: str, tasks: int) -> bool:
    connector, task_states = states(client, name)
    return connector == state and task_states == [state] * tasks


def stopped(client: ConfigClient, name: str) -> bool:
    return states(client, name) == ("STOPPED", [])


def sink_lines(folder: Path) -> int:
    return len(json_lines(folder / "records.jsonl"))


def topic_size(stack: Stack, topic: str) -> int:
    return len(asyncio.run(committed(stack.settings.bootstrap_servers, topic)))


def starts(folder: Path) -> Counter[tuple[Any, ...]]:
    """How many times each unit started, and with which ``label``."""
    return Counter(
        (e["unit"], e.get("task"), e.get("label", ""))
        for e in lifecycle(folder)
        if e["event"] == "start"
    )


def recording_on(topic: str, folder: Path) -> dict[str, str]:
    """A one-task recording sink on ``topic``, writing under ``folder``."""
    return {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "topics": topic,
        "path": str(folder),
    }


def restart_every_service(stack: Stack) -> None:
    """Every process of the stack stopped, then started again: nothing is left but the topics."""
    stack.down()
    stack.up()


def test_a_paused_connector_moves_nothing_even_across_a_restart_of_every_service(
    stack: Stack, tmp_path: Path
) -> None:
    topic, out = "paused-records", tmp_path / "sink"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(
            "steady",
            {
                "connector.class": "DatagenSource",
                "topic": topic,
                "batch.size": "20",
                "interval.ms": "50",
            },
        )
        client.create(
            "drain",
            recording_on(topic, out),
        )
        wait_for("records reaching the sink", lambda: sink_lines(out) >= 100)

        client.pause("drain")
        wait_for("the sink paused", lambda: all_in(client, "drain", "PAUSED", 1))
        consumed = sink_lines(out)
        produced = topic_size(stack, topic)
        wait_for(
            "the source still producing while the sink is paused",
            lambda: topic_size(stack, topic) >= produced + 100,
        )
        client.pause("steady")
        wait_for("the source paused", lambda: all_in(client, "steady", "PAUSED", 1))
        produced = topic_size(stack, topic)
        held_before = len(log_events(stack.log_dir, "unit_held", connector="drain"))

        restart_every_service(stack)
        wait_for(
            "the restarted workers holding both paused",
            lambda: (
                len(log_events(stack.log_dir, "unit_held", connector="drain")) >= held_before + 2
                and all_in(client, "drain", "PAUSED", 1)
                and all_in(client, "steady", "PAUSED", 1)
            ),
        )
        assert sink_lines(out) == consumed, "a paused sink took records"
        assert topic_size(stack, topic) == produced, "a paused source produced records"

        client.resume("drain")
        client.resume("steady")
        wait_for("both running again", lambda: all_in(client, "steady", "RUNNING", 1))
        wait_for(
            "the sink catching up past what was produced while paused",
            lambda: sink_lines(out) >= produced + 100,
        )
        wait_for("the sink running", lambda: all_in(client, "drain", "RUNNING", 1))
        client.delete("steady")
        client.delete("drain")
        wait_for("the sink deleted", lambda: sum(d for _, _, d in stops(out)) >= 2)
        assert [(u, t) for u, t, deleted in stops(out) if deleted] == [
            ("connector", None),
            ("task", 0),
        ]


def recording(folder: Path, label: str) -> dict[str, str]:
    return {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "tasks.max": "2",
        "topics": "lifecycle-in",
        "path": str(folder),
        "label": label,
    }


def rest_states(rest: Rest, name: str) -> tuple[str, list[str]]:
    status, body = rest("GET", f"/connectors/{name}/status")
    assert status == 200, body
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def rest_all_in(rest: Rest, name: str, state: str, tasks: int) -> bool:
    return rest_states(rest, name) == (state, [state] * tasks)


def test_every_lifecycle_call_over_rest_reaches_the_plugin_with_connect_s_codes(
    stack: Stack, tmp_path: Path
) -> None:
    """Kafka Connect's REST API with workers running, as Connect's tools drive it: each call
    answers Connect's code, and its effect is what the plugin was asked to do. Update, restart,
    stop, resume and pause stop units without the deletion marker; only the deletion has it."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    out = tmp_path / "life"
    status, created = rest("POST", "/connectors", {"name": "life", "config": recording(out, "v1")})
    assert status == 201 and created["name"] == "life", created
    assert rest.headers["Location"].endswith("/connectors/life")
    wait_for("life running", lambda: rest_all_in(rest, "life", "RUNNING", 2))
    taken = {"name": "life", "config": recording(out, "v1")}
    assert error_of(rest("POST", "/connectors", taken)) == 409

    status, _ = rest("PUT", "/connectors/life/config", recording(out, "v2"))
    assert status == 200
    wait_for(
        "the tasks restarted with the new config",
        lambda: starts(out)[("task", 0, "v2")] == 1 and starts(out)[("task", 1, "v2")] == 1,
    )
    wait_for("life running again", lambda: rest_all_in(rest, "life", "RUNNING", 2))

    before = starts(out)
    status, answer = rest("POST", "/connectors/life/restart?includeTasks=true")
    assert status == 202
    assert [answer["connector"]["state"], *(t["state"] for t in answer["tasks"])] == [
        "RESTARTING"
    ] * 3
    wait_for(
        "every unit started once more",
        lambda: (
            starts(out) - before
            == Counter({("connector", None, ""): 1, ("task", 0, "v2"): 1, ("task", 1, "v2"): 1})
        ),
    )
    wait_for("life running after the restart", lambda: rest_all_in(rest, "life", "RUNNING", 2))

    before = starts(out)
    assert rest("POST", "/connectors/life/tasks/1/restart") == (204, None)
    wait_for(
        "task 1 alone started again",
        lambda: starts(out) - before == Counter({("task", 1, "v2"): 1}),
    )
    assert error_of(rest("POST", "/connectors/life/tasks/7/restart")) == 404

    assert rest("PUT", "/connectors/life/stop") == (204, None)
    wait_for("life stopped, with no tasks", lambda: rest_states(rest, "life") == ("STOPPED", []))
    assert rest("GET", "/connectors/life/tasks") == (200, [])
    assert rest("PUT", "/connectors/life/resume") == (202, None)
    wait_for("life running after the stop", lambda: rest_all_in(rest, "life", "RUNNING", 2))

    assert rest("PUT", "/connectors/life/pause") == (202, None)
    wait_for("life paused", lambda: rest_all_in(rest, "life", "PAUSED", 2))
    assert not any(deleted for _, _, deleted in stops(out))

    assert rest("DELETE", "/connectors/life") == (204, None)  # while paused, as it happens
    wait_for("the deletion delivered", lambda: sum(d for _, _, d in stops(out)) >= 3)
    assert sorted((u, t) for u, t, deleted in stops(out) if deleted) == [
        ("connector", None),
        ("task", 0),
        ("task", 1),
    ]
    assert error_of(rest("GET", "/connectors/life/status")) == 404


def error_of(answer: tuple[int, Any]) -> int:
    """The code of an error answer, checked to be in Connect's shape."""
    status, body = answer
    assert body["error_code"] == status and body["message"], body
    return status


def test_a_connector_created_stopped_runs_nothing_until_resumed(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "later"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("later", recording(out, "v1"), initial_state="STOPPED")
        wait_for("later stopped", partial(stopped, client, "later"))
        assert lifecycle(out) == []
        client.resume("later")
        wait_for("later running", lambda: all_in(client, "later", "RUNNING", 2))
        client.delete("later")
        wait_for("later deleted", lambda: sum(d for _, _, d in stops(out)) >= 3)


def ids_in(stack: Stack, topic: str) -> Counter[int]:
    records = asyncio.run(committed(stack.settings.bootstrap_servers, topic))
    return Counter(json.loads(r.value)["id"] for r in records if r.value is not None)


def test_altered_and_reset_offsets_are_where_the_connectors_resume(
    stack: Stack, tmp_path: Path
) -> None:
    topic, out = "offsets-records", tmp_path / "sink"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(
            "counted",
            {
                "connector.class": "DatagenSource",
                "topic": topic,
                "records": "40",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
            },
        )
        client.create(
            "reader",
            recording_on(topic, out),
        )
        wait_for("40 records read", lambda: sink_lines(out) == 40)

        for name in ("counted", "reader"):
            client.stop(name)
            wait_for(f"{name} stopped", partial(stopped, client, name))
        [source] = client.offsets("counted")
        assert source["offset"] == {"next": 40}
        client.alter_offsets("counted", [{**source, "offset": {"next": 30}}])
        [sink] = client.offsets("reader")
        assert sink["offset"] == {"kafka_offset": 40}
        client.alter_offsets("reader", [{**sink, "offset": {"kafka_offset": 35}}])

        client.resume("counted")
        wait_for("ids 30 to 39 produced again", lambda: sum(ids_in(stack, topic).values()) == 50)
        assert ids_in(stack, topic) == Counter(range(40)) + Counter(range(30, 40))
        client.resume("reader")
        wait_for("the sink reading again from offset 35", lambda: sink_lines(out) == 55)
        offsets = [r["offset"] for r in json_lines(out / "records.jsonl")]
        # Read up to 40, again from 35, then the ten new records (after a transaction marker).
        assert offsets[:45] == [*range(40), *range(35, 40)]
        assert all(o > 40 for o in offsets[45:])

        client.stop("counted")
        wait_for("counted stopped again", partial(stopped, client, "counted"))
        client.reset_offsets("counted")
        assert client.offsets("counted") == []
        client.resume("counted")
        wait_for("every id produced once more", lambda: sum(ids_in(stack, topic).values()) == 90)
        assert ids_in(stack, topic) == Counter(range(40)) + Counter(range(40)) + Counter(
            range(30, 40)
        )
        client.delete("counted")
        client.delete("reader")


def task_status(client: ConfigClient, name: str) -> dict[str, Any]:
    tasks = status_json(client.status(name))["tasks"]
    return tasks[0] if tasks else {}


def test_auto_restart_brings_a_flaky_task_back_and_gives_up_on_a_broken_one(
    stack: Stack, tmp_path: Path
) -> None:
    topic = f"{tmp_path.name}-flaky"
    asyncio.run(ensure_topic(stack.settings.bootstrap_servers, topic, 1))
    auto = {"auto.restart.enable": "true", "auto.restart.backoff.ms": "300"}
    failing = {"connector.class": "failing_source.FailingSourceConnector", "tasks.max": "1"}
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("flaky", {**failing, **auto, "topic": topic, "fail.times": "2"})
        client.create("broken", {**failing, **auto, "auto.restart.max.attempts": "2"})
        wait_for("the flaky task back, moving records", lambda: topic_size(stack, topic) >= 5)
        assert task_status(client, "flaky")["state"] == "RUNNING"
        given_up = wait_for(
            "the broken task given up",
            lambda: (
                (t := task_status(client, "broken")).get("auto_restart", {}).get("given_up") and t
            ),
        )
        assert given_up["state"] == "FAILED" and given_up["auto_restart"]["attempts"] == 2
        assert "failing on purpose in poll" in given_up["trace"]
        for name, attempts in (("flaky", [1, 2]), ("broken", [1, 2])):
            asked = log_events(stack.log_dir, "auto_restart_requested", connector=name)
            assert [e["attempt"] for e in asked] == attempts, name
        client.delete("flaky")
        client.delete("broken")


def test_a_connector_asking_for_reconfiguration_changes_its_task_count_without_a_restart(
    stack: Stack, tmp_path: Path
) -> None:
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(
            "growing",
            {
                "connector.class": "growing_source.GrowingSourceConnector",
                "tasks.max": "4",
                "grow.to": "3",
                "path": str(tmp_path),
            },
        )
        wait_for("three tasks RUNNING", lambda: all_in(client, "growing", "RUNNING", 3))
        assert len(client.get("growing").tasks) == 3
        assert len(json_lines(tmp_path / "starts.jsonl")) == 1  # asked again, not restarted
        client.delete("growing")


def test_the_topics_a_pipeline_uses_are_listed_reset_and_forgotten_with_it(
    stack: Stack, tmp_path: Path
) -> None:
    """KIP-558 over REST, with workers running: a source and a sink on one topic each list it
    once their tasks used it; a reset forgets it until the running tasks next use it, as
    Connect's does; a connector deleted and made again starts with none."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    topic = "tracked-records"
    source = {
        "connector.class": "DatagenSource",
        "topic": topic,
        "batch.size": "5",
        "interval.ms": "1000",  # a batch a second: the reset is seen before the next
    }

    def topics(name: str) -> list[str] | None:
        status, body = rest("GET", f"/connectors/{name}/topics")
        assert status == 200, body
        return body[name]["topics"] or None

    assert rest("POST", "/connectors", {"name": "tracked-src", "config": source})[0] == 201
    sink = recording_on(topic, tmp_path / "sink")
    assert rest("PUT", "/connectors/tracked-snk/config", sink)[0] == 201
    assert wait_for("the source's topic", partial(topics, "tracked-src")) == [topic]
    assert wait_for("the sink's topic", partial(topics, "tracked-snk")) == [topic]

    started = len(log_events(stack.log_dir, "task_started", connector="tracked-src"))
    assert rest("PUT", "/connectors/tracked-src/topics/reset") == (202, None)
    assert topics("tracked-src") is None
    # Its task, still running, reports the topic again as it next writes to it.
    assert wait_for("the topic again", partial(topics, "tracked-src")) == [topic]
    assert len(log_events(stack.log_dir, "task_started", connector="tracked-src")) == started

    for name in ("tracked-src", "tracked-snk"):
        assert rest("DELETE", f"/connectors/{name}") == (204, None)
        status, body = rest("GET", f"/connectors/{name}/topics")
        assert status == 404, body
    stopped_source = {"name": "tracked-src", "config": source, "initial_state": "STOPPED"}
    assert rest("POST", "/connectors", stopped_source)[0] == 201
    # Nothing of the one deleted, once its worker has stopped its tasks: what they recorded
    # until then is forgotten there.
    wait_for("the deleted one's topics forgotten", lambda: topics("tracked-src") is None)
    assert rest("DELETE", "/connectors/tracked-src") == (204, None)


def test_a_cluster_log_level_reaches_every_service_and_plugin_process(
    stack: Stack, spark: Stack, tmp_path: Path
) -> None:
    """KIP-976's scope=cluster: the level is set in the config service, the coordinator, each
    worker and their plugin processes, whose debug events then appear, and the Spark executor
    (which the workers tell); worker scope stays the answering process's own."""
    rest = Rest(f"http://{stack.settings.rest_addr}")
    source = {
        "connector.class": "DatagenSource",
        "topic": "cluster-level-records",
        "batch.size": "5",
        "interval.ms": "200",
    }
    assert rest("POST", "/connectors", {"name": "chatty", "config": source})[0] == 201
    try:
        wait_for("chatty running", lambda: rest_all_in(rest, "chatty", "RUNNING", 1))
        assert not log_events(stack.log_dir, "batch_polled", connector="chatty")
        debug = {"level": "DEBUG"}
        assert rest("PUT", "/admin/loggers/headrace?scope=cluster", debug) == (204, None)
        assert rest("GET", "/admin/loggers/headrace")[1]["level"] == "DEBUG"
        wait_for(
            "the plugin process's debug events",
            lambda: log_events(stack.log_dir, "batch_polled", connector="chatty"),
        )
        set_in = {e["service"] for e in log_events(stack.log_dir, "log_level_set")}
        assert {"config", "worker"} <= set_in and any(s.startswith("coordinator") for s in set_in)
        wait_for(
            "the executor's level set",
            lambda: log_events(spark.log_dir, "log_level_set", logger="headrace", to="DEBUG"),
        )
        assert not log_events(stack.log_dir, "executor_log_levels_failed")
    finally:
        assert rest("PUT", "/admin/loggers/headrace?scope=cluster", {"level": "INFO"})[0] == 204
        assert rest("DELETE", "/connectors/chatty") == (204, None)
    assert rest("GET", "/admin/loggers/headrace")[1]["level"] == "INFO"
    assert rest("PUT", "/admin/loggers/headrace?scope=galaxy", {"level": "INFO"})[0] == 400
