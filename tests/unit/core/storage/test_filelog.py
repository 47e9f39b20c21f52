"""The file a log is kept in: compacted, written whole at each append, and refused with the
reason when it cannot be read as one whole log."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headrace.core.storage.filelog import FileTopic, LogFileError, file_logs
from headrace.core.storage.topiclog import LogRecord
from tests.support import eventually

VALUES = st.one_of(st.none(), st.binary(max_size=8), st.text(max_size=8).map(str.encode))
APPENDS = st.lists(
    st.lists(st.tuples(st.sampled_from(["a", "b", "c", "ü"]), VALUES), min_size=1, max_size=4),
    max_size=6,
)


def latest(appends: list[list[tuple[str, bytes | None]]]) -> dict[str, bytes]:
    seen: dict[str, bytes | None] = {}
    for batch in appends:
        seen.update(batch)
    return {k: v for k, v in seen.items() if v is not None}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(appends=APPENDS)
async def test_a_reopened_file_holds_the_latest_value_of_each_key(
    tmp_path_factory: pytest.TempPathFactory, appends: list[list[tuple[str, bytes | None]]]
) -> None:
    path = tmp_path_factory.mktemp("log") / "offsets.json"
    topic = FileTopic("offsets", path)
    folded: dict[str, bytes | None] = {}
    log = file_logs(topic)(lambda r: folded.__setitem__(r.key, r.value))
    await log.start()
    for done, batch in enumerate(appends, start=1):
        await log.append_many(batch)
        # Between appends the file is always whole: another process reads it as it is now.
        again = FileTopic("offsets", path)
        assert {r.key: r.value for r in again.records} == latest(appends[:done])
    assert {k: v for k, v in folded.items() if v is not None} == latest(appends)
    replayed: dict[str, bytes | None] = {}
    reader = file_logs(FileTopic("offsets", path))(lambda r: replayed.__setitem__(r.key, r.value))
    await reader.start(writer=False)
    assert replayed == latest(appends)


def files_in(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}


async def test_offsets_go_on_after_a_restart_and_nothing_is_left_beside_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "offsets.json"
    first = file_logs(FileTopic("offsets", path))(lambda r: None)
    await first.start()
    assert await first.append_many([("a", b"1"), ("b", b"2"), ("a", None)]) == [
        (0, 0),
        (0, 1),
        (0, 2),
    ]
    again = FileTopic("offsets", path)
    assert again.records == [LogRecord(0, 1, "b", b"2")]
    later = file_logs(again)(lambda r: None)
    await later.start()
    assert await later.append_many([("c", b"\xff")]) == [(0, 3)]  # not valid UTF-8: base64
    assert files_in(tmp_path) == {"offsets.json": 0o600}  # offsets may say more than they should


def whole(tmp_path: Path) -> Path:
    path = tmp_path / "offsets.json"
    path.write_text(
        json.dumps(
            {
                "format": "headrace-log",
                "version": 1,
                "log": "offsets",
                "next_offset": 2,
                "records": [{"offset": 1, "key": "k", "value": {"text": "v"}}],
            }
        )
    )
    return path


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda text: text[: len(text) // 2], "is not a whole log of headrace's"),
        (lambda text: "", "is empty"),
        (lambda text: "key=value\n", "is not a whole log of headrace's"),
        (lambda text: text.replace("headrace-log", "other"), 'no "format": "headrace-log"'),
        (lambda text: text.replace('"version": 1', '"version": 9'), "is version 9"),
        (lambda text: text.replace('"offset": 1', '"offset": 5'), "out of order or out of range"),
        (lambda text: text.replace('{"text": "v"}', '{"base64": "!!"}'), "cannot be read"),
        (lambda text: text.replace('"key": "k", ', ""), "a record cannot be read"),
    ],
)
def test_a_file_that_is_not_one_whole_log_is_refused_naming_it(
    tmp_path: Path, damage: object, says: str
) -> None:
    path = whole(tmp_path)
    assert FileTopic("offsets", path).records == [LogRecord(0, 1, "k", b"v")]
    path.write_text(damage(path.read_text()))  # type: ignore[operator]  # a lambda of the table
    with pytest.raises(LogFileError, match=str(path)) as refused:
        FileTopic("offsets", path)
    assert says in str(refused.value)


async def test_an_append_whose_caller_gives_up_is_still_written_whole_and_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "offsets.json"
    folded: dict[str, bytes | None] = {}
    log = file_logs(FileTopic("offsets", path))(lambda r: folded.__setitem__(r.key, r.value))
    await log.start()
    given_up = asyncio.create_task(log.append_many([("a", b"1")]))
    await asyncio.sleep(0)  # under way: its file is being written on a thread
    given_up.cancel()
    assert await log.append_many([("b", b"2")]) == [(0, 1)]  # after it, never beside it
    assert given_up.cancelled()
    assert folded == {"a": b"1", "b": b"2"}
    assert {r.key: r.value for r in FileTopic("offsets", path).records} == folded


async def test_with_a_flush_interval_appends_are_written_at_most_that_often(
    tmp_path: Path,
) -> None:
    """Connect's offset.flush.interval.ms: the first append is written at once, those within
    the interval after it when the interval is over (or at flush), each read at once."""
    path = tmp_path / "offsets.json"
    topic = FileTopic("offsets", path, flush_every_s=3600)
    seen: list[str] = []
    log = file_logs(topic)(lambda r: seen.append(r.key))
    await log.start()
    await log.append_many([("a", b"1")])
    await log.append_many([("b", b"2")])
    assert seen == ["a", "b"]
    assert [r.key for r in FileTopic("offsets", path).records] == ["a"]  # what a crash leaves
    await topic.close()
    assert [r.key for r in FileTopic("offsets", path).records] == ["a", "b"]


async def test_an_interval_that_passes_writes_what_was_appended_within_it(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    topic = FileTopic("offsets", path, flush_every_s=0.2)
    log = file_logs(topic)(lambda r: None)
    await log.start()
    await log.append_many([("a", b"1")])
    await log.append_many([("a", b"2"), ("b", b"3")])

    def written() -> list[LogRecord] | None:
        records = FileTopic("offsets", path).records
        return records if len(records) == 2 else None

    records = await eventually("the interval's write", written, within=30)
    assert [(r.key, r.value) for r in records] == [("a", b"2"), ("b", b"3")]
    await topic.close()


async def test_an_append_after_close_is_written_before_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    topic = FileTopic("offsets", path, flush_every_s=3600)
    log = file_logs(topic)(lambda r: None)
    await log.start()
    await log.append_many([("a", b"1")])
    await topic.close()
    await log.append_many([("b", b"2")])  # a task that stores its last offsets late
    assert [r.key for r in FileTopic("offsets", path).records] == ["a", "b"]
