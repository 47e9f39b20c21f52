"""The file connectors (Kafka's FileStreamSource and FileStreamSink) on real files, and the path
policy every config-named path goes through (``context.paths``), down to the operator's setting.

No Kafka here: the tasks are driven the way the runtime drives them, with contexts built by hand
(a fake offset reader stands in for the offsets topic, as in the datagen tests).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.isolation.plugins import read_manifest
from headrace.isolation.supervisor import host_env
from headrace.runtime.host.hosted import HostedPlugin, no_stored_offsets
from headrace.runtime.host.loader import load_connector_class
from headrace.sdk import (
    ConfigException,
    ConnectError,
    ConnectorContext,
    Paths,
    SchemaType,
    SinkBatch,
    SinkRecord,
    SinkTaskContext,
    SourceTaskContext,
)
from tests.support import builtin_plugin_module

source = builtin_plugin_module("file-source", "1.0.0")
sink = builtin_plugin_module("file-sink", "1.0.0")


class Offsets:
    """A stored offset per source partition, as the runtime's reader answers."""

    def __init__(self, stored: dict[str, Any] | None = None) -> None:
        self.stored = stored
        self.asked: list[Mapping[str, Any]] = []

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        self.asked.append(dict(partition))
        return self.stored

    def offsets(self, partitions: Any) -> list[Any]:
        return [(p, self.stored) for p in partitions]


@pytest.fixture(autouse=True)
def _short_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll with nothing new waits IDLE_POLL_S; a test need not wait a second for that."""
    monkeypatch.setattr(source, "IDLE_POLL_S", 0.01)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    return folder


async def source_task(
    root: Path,
    file: str,
    *,
    stored: dict[str, Any] | None = None,
    config: Mapping[str, str] | None = None,
) -> Any:
    task = source.FileStreamSourceTask()
    task.initialize(SourceTaskContext("src", 0, Offsets(stored), paths=Paths((root,))))
    await task.start({"file": file, "topic": "lines", **(config or {})})
    return task


async def drain(task: Any) -> list[Any]:
    """Every record the task has to give now, poll by poll."""
    records = []
    while batch := await task.poll():
        records += batch.records()
    return records


# Lines: split on \n, \r\n and \r; a partial last line waits for its terminator.


def test_lines_end_with_any_terminator_and_take_their_bytes() -> None:
    assert source.split_lines(b"a\nb\r\nc\rd", 10) == [("a", 2), ("b", 5), ("c", 7)]
    assert source.split_lines(b"\n\r\n", 10) == [("", 1), ("", 3)]
    assert source.split_lines(b"x\ny\nz\n", 2) == [("x", 2), ("y", 4)]


def test_a_partial_last_line_and_a_last_carriage_return_wait() -> None:
    assert source.split_lines(b"a\npartial", 10) == [("a", 2)]
    assert source.split_lines(b"a\nb\r", 10) == [("a", 2)]  # b\r may still become b\r\n
    assert source.split_lines(b"a\nb\r\n", 10) == [("a", 2), ("b", 5)]
    assert source.split_lines(b"", 10) == []


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert source.split_lines("é\n".encode() + b"\xff\n", 10) == [("é", 3), ("\ufffd", 5)]


CHUNKS = st.sampled_from([b"a", b"bc", "é".encode(), b"\n", b"\r", b"\r\n", b"\xff"])


def complete_lines(data: bytes) -> list[tuple[str, int]]:
    """The model: ``bytes.splitlines`` knows exactly \\n, \\r\\n and \\r; what has no
    terminator yet, or ends in a \\r that a \\n may still follow, is no line yet."""
    found, end = [], 0
    for piece in data.splitlines(keepends=True):
        end += len(piece)
        if not piece.endswith((b"\n", b"\r")) or (end == len(data) and piece.endswith(b"\r")):
            break
        text = piece[:-2] if piece.endswith(b"\r\n") else piece[:-1]
        found.append((text.decode("utf-8", errors="replace"), end))
    return found


@given(
    st.lists(CHUNKS.filter(lambda c: b"\r" not in c), max_size=40).map(b"".join), st.integers(1, 12)
)
def test_the_native_split_gives_what_split_lines_gives(data: bytes, limit: int) -> None:
    lines, consumed = source.lines_of(data, limit)
    expected = source.split_lines(data, limit)
    assert lines.to_pylist() == [text for text, _ in expected]
    assert consumed == (expected[-1][1] if expected else 0)


@given(st.lists(CHUNKS, max_size=40), st.integers(1, 50))
def test_split_lines_finds_every_complete_line_and_no_other(
    chunks: list[bytes], limit: int
) -> None:
    data = b"".join(chunks)
    assert source.split_lines(data, limit) == complete_lines(data)[:limit]


# The source task on a real file.


async def test_each_line_is_a_string_record_with_its_byte_position(root: Path) -> None:
    (root / "in.txt").write_bytes("one\r\ntwo\nthré\rfour".encode())
    # One line per poll: each batch's offset is the position after its last line.
    task = await source_task(root, "in.txt", config={"batch.size": "1"})
    records = await drain(task)
    assert [r.value for r in records] == ["one", "two", "thré"]
    assert [r.source_offset for r in records] == [
        {"position": 5},
        {"position": 9},
        {"position": 15},
    ]
    first = records[0]
    assert (first.key, first.key_schema, first.partition) == (None, None, None)
    assert first.value_schema.type is SchemaType.STRING and not first.value_schema.optional
    assert first.source_partition == {"filename": "in.txt"}
    assert {r.topic for r in records} == {"lines"}


async def test_a_partial_line_is_sent_once_its_newline_arrives(root: Path) -> None:
    path = root / "in.txt"
    path.write_bytes(b"a\nhalf")
    task = await source_task(root, str(path), config={"batch.size": "1"})
    assert [r.value for r in await drain(task)] == ["a"]
    with path.open("ab") as f:
        f.write(b" done\r")
    assert await task.poll() == []  # a \r at the end may still become \r\n
    with path.open("ab") as f:
        f.write(b"\nnext\n")
    records = await drain(task)
    assert [(r.value, r.source_offset["position"]) for r in records] == [
        ("half done", 13),
        ("next", 18),
    ]


async def test_a_poll_returns_at_most_batch_size_records(root: Path) -> None:
    (root / "in.txt").write_text("".join(f"line {i}\n" for i in range(25)))
    task = await source_task(root, "in.txt", config={"batch.size": "10"})
    sizes = []
    while batch := await task.poll():
        sizes.append(len(batch))
    assert sizes == [10, 10, 5]


async def test_batches_of_lines_longer_than_a_read_chunk_are_whole(root: Path) -> None:
    long_lines = [chr(ord("a") + i) * (source.READ_CHUNK + 7) for i in range(3)]
    (root / "in.txt").write_text("".join(f"{line}\n" for line in long_lines))
    task = await source_task(root, "in.txt", config={"batch.size": "2"})
    sizes = []
    while batch := await task.poll():
        sizes.append(len(batch))
        assert batch.values.to_pylist() == long_lines[sum(sizes) - len(batch) : sum(sizes)]
    assert sum(sizes) == 3 and max(sizes) <= 2


async def test_a_task_resumes_after_its_stored_position(root: Path) -> None:
    (root / "in.txt").write_bytes(b"one\ntwo\r\nthree\n")
    task = await source_task(root, "in.txt", stored={"position": 9})
    records = await drain(task)
    assert [(r.value, r.source_offset) for r in records] == [("three", {"position": 15})]
    assert task.context.offset_reader.asked == [{"filename": "in.txt"}]


async def test_positions_resume_where_a_restarted_task_left_off(root: Path) -> None:
    path = root / "in.txt"
    path.write_text("".join(f"{i}\n" for i in range(7)))
    first = await source_task(root, "in.txt", config={"batch.size": "3"})
    batch = await first.poll()
    await first.stop()
    second = await source_task(root, "in.txt", stored=batch.source_offset)
    assert [r.value for r in batch.records() + await drain(second)] == [str(i) for i in range(7)]


async def test_a_stored_position_that_is_no_position_fails_the_start(root: Path) -> None:
    with pytest.raises(ConnectError, match="incorrect type"):
        await source_task(root, "in.txt", stored={"position": "12"})


async def test_a_missing_file_is_waited_for(root: Path) -> None:
    task = await source_task(root, "later.txt")
    assert await task.poll() == []
    (root / "later.txt").write_text("here\n")
    assert [r.value for r in await drain(task)] == ["here"]


async def test_a_cancelled_poll_loses_no_line(root: Path) -> None:
    path = root / "in.txt"
    path.write_text("a\n")
    task = await source_task(root, "in.txt")
    assert [r.value for r in await drain(task)] == ["a"]
    waiting = asyncio.ensure_future(task.poll())  # nothing new: it waits
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    with path.open("a") as f:
        f.write("b\n")
    assert [(r.value, r.source_offset) for r in await drain(task)] == [("b", {"position": 4})]


async def test_the_source_connector_runs_one_task_with_its_config(root: Path) -> None:
    config = {"name": "src", "file": "in.txt", "topic": "lines", "tasks.max": "4"}
    connector = source.FileStreamSourceConnector()
    connector.initialize(ConnectorContext("src", paths=Paths((root,))))
    await connector.start(config)
    assert connector.task_configs(4) == [config]


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"topic": "t"}, "standard input"),
        ({"file": " ", "topic": "t"}, "file"),
        ({"file": "in.txt"}, '"topic"'),
        ({"file": "in.txt", "topic": "a,b"}, "single topic"),
        ({"file": "in.txt", "topic": "t", "batch.size": "0"}, "batch.size"),
    ],
)
async def test_bad_source_configs_fail_the_start(
    root: Path, config: dict[str, str], named: str
) -> None:
    connector = source.FileStreamSourceConnector()
    connector.initialize(ConnectorContext("src", paths=Paths((root,))))
    with pytest.raises(ConfigException, match=named):
        await connector.start(config)
    assert any(r.errors for r in connector.validate(config))


# The sink task on a real file.


def sink_record(value: Any, offset: int = 0) -> SinkRecord:
    return SinkRecord("t", 0, offset, None, value)


async def sink_task(root: Path, file: str) -> Any:
    task = sink.FileStreamSinkTask()
    task.initialize(SinkTaskContext("snk", 0, paths=Paths((root,))))
    await task.start({"file": file, "topics": "t"})
    return task


async def test_the_sink_appends_each_value_as_a_line_as_kafka_prints_it(root: Path) -> None:
    path = root / "out.txt"
    path.write_text("kept\n")
    task = await sink_task(root, "out.txt")
    values: list[Any] = ["text", "", "thré", 42, 2.5, None, {"a": 1}]
    await task.put([sink_record(v, k) for k, v in enumerate(values)])
    await task.flush({})
    assert path.read_text() == "kept\ntext\n\nthré\n42\n2.5\nnull\n{'a': 1}\n"
    await task.put([sink_record("last")])
    await task.stop()
    assert path.read_text().endswith("{'a': 1}\nlast\n")  # stop flushes and closes


@given(
    st.lists(st.none() | st.text(), max_size=20),
    st.sampled_from([pa.string(), pa.large_string(), pa.binary()]),
)
async def test_a_batch_is_written_as_its_records_are_one_by_one(
    tmp_path_factory: pytest.TempPathFactory, values: list[Any], arrow_type: pa.DataType
) -> None:
    root = tmp_path_factory.mktemp("files")
    if arrow_type == pa.binary():
        values = [None if v is None else v.encode() for v in values]
    batch = SinkBatch(
        "t",
        0,
        offsets=pa.array(range(len(values)), pa.int64()),
        timestamps=pa.array([None] * len(values), pa.int64()),
        keys=pa.array([None] * len(values), pa.string()),
        values=pa.array(values, arrow_type),
    )
    by_batch, by_record = await sink_task(root, "batch.txt"), await sink_task(root, "records.txt")
    await by_batch.put_batch(batch)
    await by_record.put(batch.records())
    await by_batch.stop()
    await by_record.stop()
    assert (root / "batch.txt").read_bytes() == (root / "records.txt").read_bytes()


async def test_records_and_batches_land_in_the_order_they_were_put(root: Path) -> None:
    task = await sink_task(root, "mixed.txt")
    await task.put([sink_record("first")])
    values = pa.array(["second", None, "third"], pa.string())
    nothing = pa.array([None] * 3, pa.int64())
    await task.put_batch(SinkBatch("t", 0, nothing, nothing, nothing, values))
    await task.put([sink_record("fourth")])
    await task.stop()
    assert (root / "mixed.txt").read_text() == "first\nsecond\nnull\nthird\nfourth\n"


async def test_flush_hands_the_lines_to_the_operating_system(root: Path) -> None:
    task = await sink_task(root, "out.txt")
    await task.put([sink_record("x")])
    await task.flush({})
    assert (root / "out.txt").read_bytes() == b"x\n"
    await task.stop()


async def test_a_sink_whose_folder_does_not_exist_fails_to_start(root: Path) -> None:
    with pytest.raises(ConnectError, match="Couldn't find or create file"):
        await sink_task(root, "missing/out.txt")


async def test_every_sink_task_gets_the_same_config(root: Path) -> None:
    config = {"name": "snk", "file": "out.txt", "topics": "t", "tasks.max": "3"}
    connector = sink.FileStreamSinkConnector()
    connector.initialize(ConnectorContext("snk", paths=Paths((root,))))
    await connector.start(config)
    assert connector.task_configs(3) == [config, config, config]
    with pytest.raises(ConfigException, match="standard output"):
        await connector.start({"topics": "t"})


# The path policy: context.paths, and both connectors and tasks going through it.


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret\n")
    return folder


def test_paths_inside_a_root_resolve_to_absolute_paths(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    paths = Paths((root, other))
    assert paths.resolve("a/b.txt", "file") == root.resolve() / "a" / "b.txt"
    assert paths.resolve("a/../b.txt", "file") == root.resolve() / "b.txt"
    assert paths.resolve(str(other / "c.txt"), "file") == other.resolve() / "c.txt"
    (root / "in-link").symlink_to(root / "a")
    assert paths.resolve("in-link/x", "file") == root.resolve() / "a" / "x"


@pytest.mark.parametrize(
    "raw", ["../secret.txt", "../elsewhere/secret.txt", "a/../../x", "/etc/passwd", "out/x"]
)
def test_paths_leading_outside_every_root_are_refused(root: Path, outside: Path, raw: str) -> None:
    (root / "out").symlink_to(outside)
    with pytest.raises(ConfigException) as refused:
        Paths((root,)).resolve(raw, "file")
    message = str(refused.value)
    assert "configuration file" in message and raw in message and str(root.resolve()) in message


def test_a_root_named_as_a_prefix_of_another_folder_does_not_allow_it(tmp_path: Path) -> None:
    (tmp_path / "files-evil").mkdir()
    with pytest.raises(ConfigException, match="outside"):
        Paths((tmp_path / "files",)).resolve(str(tmp_path / "files-evil" / "x"), "file")


@pytest.mark.parametrize("raw", ["", "  ", "a\x00b"])
def test_empty_and_unresolvable_paths_are_refused(root: Path, raw: str) -> None:
    with pytest.raises(ConfigException, match="configuration file"):
        Paths((root,)).resolve(raw, "file")


def test_a_context_made_without_the_runtime_allows_no_folder(root: Path) -> None:
    for context in (ConnectorContext("c"), SourceTaskContext("c", 0), SinkTaskContext("c", 0)):
        with pytest.raises(ConfigException, match="no folder is allowed"):
            context.paths.resolve(str(root / "x"), "file")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A root holding folders and symlinks into itself and out of it, and the folder outside."""
    base = tmp_path_factory.mktemp("policy")
    root, outside = base / "root", base / "outside"
    for folder in (root / "a" / "b", outside / "a"):
        folder.mkdir(parents=True)
    (root / "in").symlink_to(root / "a" / "b")
    (root / "out").symlink_to(outside)
    (root / "a" / "up").symlink_to("../..")
    return root, outside


SEGMENTS = st.sampled_from(["a", "b", "x", "..", ".", "in", "out", "up"])


@given(st.lists(SEGMENTS, min_size=1, max_size=8), st.booleans())
def test_a_path_is_accepted_exactly_when_it_really_lies_inside_the_root(
    tree: tuple[Path, Path], segments: list[str], absolute: bool
) -> None:
    root, _ = tree
    raw = os.path.join(str(root) if absolute else "", *segments)
    real = Path(os.path.realpath(root / raw))
    inside = real.is_relative_to(root.resolve())
    try:
        resolved = Paths((root,)).resolve(raw, "file")
    except ConfigException as refused:
        assert not inside and "file" in str(refused)
    else:
        assert inside and resolved == real


async def test_both_connectors_and_their_tasks_refuse_a_file_outside_the_roots(
    root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside)
    for raw in ("/etc/passwd", "../../x", "out/secret.txt"):
        source_connector = source.FileStreamSourceConnector()
        source_connector.initialize(ConnectorContext("src", paths=Paths((root,))))
        with pytest.raises(ConfigException, match="configuration file"):
            await source_connector.start({"file": raw, "topic": "t"})
        with pytest.raises(ConfigException, match="configuration file"):
            await source_task(root, raw)
        sink_connector = sink.FileStreamSinkConnector()
        sink_connector.initialize(ConnectorContext("snk", paths=Paths((root,))))
        with pytest.raises(ConfigException, match="configuration file"):
            await sink_connector.start({"file": raw, "topics": "t"})
        with pytest.raises(ConfigException, match="configuration file"):
            await sink_task(root, raw)
    assert not (outside / "x").exists()


async def test_a_symlink_made_after_start_does_not_lead_the_source_out(
    root: Path, outside: Path
) -> None:
    task = await source_task(root, "later.txt")
    assert await task.poll() == []  # not there yet
    (root / "later.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ConfigException, match="outside"):
        await task.poll()


# The operator's setting, down to the contexts the runtime makes.


def test_file_roots_default_to_files_under_var(tmp_path: Path) -> None:
    assert Settings(var_dir=tmp_path).file_roots == (tmp_path / "files",)
    assert Settings().file_roots == (Path("var") / "files",)


def test_file_roots_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HEADRACE_FILE_ROOTS", f"{tmp_path / 'a'}::{tmp_path / 'b'}")
    settings = Settings()
    assert settings.file_roots == (tmp_path / "a", tmp_path / "b")
    expected = f"{tmp_path / 'a'}:{tmp_path / 'b'}"
    assert settings.to_env()["HEADRACE_FILE_ROOTS"] == expected
    assert host_env(settings, "w1")["HEADRACE_FILE_ROOTS"] == expected


async def test_the_runtime_hands_connectors_the_operators_roots(root: Path) -> None:
    manifest = read_manifest(BUILTIN_PLUGINS / "file-source" / "1.0.0" / "manifest.json")
    settings = Settings(bootstrap_servers="unused:1", file_roots=(root,))
    plugin = HostedPlugin(
        manifest, load_connector_class(manifest), settings, 1.0, no_stored_offsets
    )
    config = {"name": "src", "file": "in.txt", "topic": "t", "tasks.max": "1"}
    assert await plugin.start_connector("src", config) == [config]
    with pytest.raises(ConfigException, match="outside"):
        await plugin.start_connector("bad", {**config, "name": "bad", "file": "/etc/passwd"})
    await plugin.shutdown()


@pytest.mark.parametrize("connector_class", ["source", "sink"])
def test_validate_refuses_a_file_outside_the_allowed_folders_as_start_would(
    root: Path, connector_class: str
) -> None:
    connector = (
        source.FileStreamSourceConnector()
        if connector_class == "source"
        else sink.FileStreamSinkConnector()
    )
    connector.initialize(ConnectorContext("files", paths=Paths((root,))))
    common = {"topic": "t", "topics": "t"}
    errors = {r.name: r.errors for r in connector.validate({**common, "file": "/etc/passwd"})}
    assert len(errors["file"]) == 1 and "outside the allowed folders" in errors["file"][0]
    allowed = connector.validate({**common, "file": "in.txt"})
    assert not any(r.errors for r in allowed if r.name == "file")
