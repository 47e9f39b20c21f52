"""What a Java plugin's JVM writes reaches its plugin process's log as that process's own lines:
JSON, with the secrets it holds hidden, each bounded (found by the second perimeter review: the
JVM's output bypassed masking and JSON framing)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from headrace.core.model.plugins import PluginDescriptor
from headrace.core.security import secrets
from headrace.core.settings import Settings
from headrace.isolation.supervisor import PluginProcess
from headrace.runtime.host.jvm import MAX_LINE, relay
from tests.support import captured_log


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    monkeypatch.setattr(secrets, "_registered", frozenset())
    monkeypatch.setattr(secrets, "_in_order", ())
    with captured_log("plugin") as out:
        yield out


async def test_each_line_of_the_jvm_is_a_masked_json_line_of_the_process(
    logged: io.StringIO,
) -> None:
    secrets.register(["jdbc-pw-8f2a"])
    output = asyncio.StreamReader()
    output.feed_data(b"[main] INFO org.example.Sink - connecting with jdbc-pw-8f2a\n")
    output.feed_data(b"[main] ERROR org.example.Sink - it broke\n\tat org.example.Sink.put\n")
    output.feed_data(b"x" * (MAX_LINE * 2) + b"\n")
    output.feed_data(b"Terminating due to java.lang.OutOfMemoryError: Java heap space")
    output.feed_eof()
    await relay(output)
    lines = [json.loads(line) for line in logged.getvalue().splitlines()]
    assert [(e["logger"], e["level"]) for e in lines] == [
        ("jvm", "info"),
        ("jvm", "error"),
        ("jvm", "error"),  # a stack trace's line, at its message's level
        ("jvm", "error"),
        ("jvm", "error"),
    ]
    assert lines[0]["event"].endswith("connecting with [hidden]")
    assert lines[2]["event"] == "\tat org.example.Sink.put"
    assert len(lines[3]["event"]) == MAX_LINE
    assert "OutOfMemoryError" in lines[4]["event"]


def test_a_plugin_process_that_ends_as_it_starts_says_only_its_own_reason(
    tmp_path: Path,
) -> None:
    plugin = PluginDescriptor("x.XConnector", "1.0.0", "source", "x", "XConnector", tmp_path)
    process = PluginProcess(
        plugin, Settings(), "w1", tmp_path, tmp_path, lambda *_: None, lambda *_: None
    )
    process.log_file.write_text(
        "something the plugin printed: the database password is hunter2\n"
        + json.dumps({"event": "plugin_load_failed", "level": "error", "error": "no module x"})
        + "\n"
    )
    said = process.start_failure()
    assert said.startswith("plugin_load_failed: no module x") and "hunter2" not in said
    process.log_file.write_text("Traceback: hunter2\n")
    said = process.start_failure()
    assert "hunter2" not in said and process.log_file.name in said
