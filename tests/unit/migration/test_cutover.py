"""Which step a move takes next, read from both sides, and what a failed move leaves: the
steps over in-memory sides that answer as Connect's REST API does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from headrace.clients.connect import ConnectApi, RestError, Status
from headrace.migration.cutover import Cutover, MoveError, Step, next_step
from headrace.migration.plan import Move

RUNNING = Status("RUNNING", ("RUNNING",))
STARTING = Status("RUNNING", ())
STOPPED = Status("STOPPED", ())
STOPPING = Status("STOPPED", ("RUNNING",))
PAUSED = Status("PAUSED", ("PAUSED",))
FAILED = Status("RUNNING", ("FAILED",), "java.lang.RuntimeException: boom")
TASKLESS = Status("RUNNING", (), taskless=True)  # no task configs: nothing to mirror, say


@pytest.mark.parametrize(
    ("here", "there", "step"),
    [
        (RUNNING, None, Step.CREATE),
        (STOPPED, None, Step.CREATE),
        (RUNNING, STOPPED, Step.STOP),
        (PAUSED, STOPPED, Step.STOP),
        (STOPPING, STOPPED, Step.STOP),  # its tasks not gone yet: stopped again, waited for
        (STOPPED, STOPPED, Step.MOVE_OFFSETS),
        (STOPPED, RUNNING, Step.DELETE),
        (STOPPED, TASKLESS, Step.DELETE),
        (None, RUNNING, Step.DONE),
        (None, TASKLESS, Step.DONE),
    ],
)
def test_the_next_step_is_read_from_both_sides(
    here: Status | None, there: Status | None, step: Step
) -> None:
    assert next_step(here, there, keep=False) is step


def test_kept_where_it_came_from_a_move_is_done_once_it_runs_there() -> None:
    assert next_step(STOPPED, RUNNING, keep=True) is Step.DONE


@pytest.mark.parametrize(
    ("here", "there", "why"),
    [
        (None, None, "neither side"),
        (RUNNING, RUNNING, "running on one side only"),
        (STOPPED, FAILED, "restart it there until it runs, then run the same command again"),
        (STOPPED, STARTING, "restart it there until it runs"),  # its tasks not started yet
        (None, STOPPED, "its offsets cannot be read any more"),
    ],
)
def test_a_move_that_would_be_wrong_is_refused(
    here: Status | None, there: Status | None, why: str
) -> None:
    with pytest.raises(MoveError, match=why):
        next_step(here, there, keep=False)


@dataclass
class Memory:
    """One side's connectors in memory; ``fail`` makes the calls named in it fail."""

    name: str
    connectors: dict[str, Status] = field(default_factory=dict)
    offsets_of: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    fail: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    resumed_state: Status = RUNNING

    def _call(self, call: str) -> None:
        self.calls.append(call)
        if call in self.fail:
            raise RestError(self.name, call, 500, "it failed")

    async def status(self, name: str) -> Status | None:
        return self.connectors.get(name)

    async def create_stopped(self, name: str, config: Any) -> None:
        self._call("create")
        self.connectors[name] = STOPPED

    async def stop(self, name: str) -> None:
        self._call("stop")
        self.connectors[name] = STOPPED

    async def resume(self, name: str) -> None:
        self._call("resume")
        self.connectors[name] = self.resumed_state

    async def pause(self, name: str) -> None:
        self._call("pause")
        self.connectors[name] = PAUSED

    async def reset_offsets(self, name: str) -> None:
        self._call("reset_offsets")
        self.offsets_of.pop(name, None)

    async def offsets(self, name: str) -> list[dict[str, Any]]:
        return self.offsets_of.get(name, [])

    async def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> None:
        self._call("alter_offsets")
        self.offsets_of[name] = offsets

    async def delete(self, name: str) -> None:
        self._call("delete")
        if name not in self.connectors:
            raise RestError(self.name, "delete", 404, f"Connector {name} not found")
        del self.connectors[name]


OFFSETS = [{"partition": {"filename": "in.txt"}, "offset": {"position": 42}}]
MOVE = Move("files", "source", "FileStreamSource", "1.0.0", {"file": "in.txt"}, [])


def sides() -> tuple[Memory, Memory]:
    connect = Memory("Kafka Connect", {"files": RUNNING}, {"files": OFFSETS})
    return connect, Memory("headrace")


def cutover(source: Memory, target: Memory, **options: Any) -> Cutover:
    return Cutover(cast(ConnectApi, source), cast(ConnectApi, target), wait_s=1, **options)


async def test_a_move_takes_every_step_in_order() -> None:
    connect, headrace = sides()
    await cutover(connect, headrace).move(MOVE)
    assert headrace.calls == ["create", "reset_offsets", "alter_offsets", "resume"]
    assert connect.calls == ["stop", "delete"]
    assert headrace.offsets_of["files"] == OFFSETS and headrace.connectors["files"] == RUNNING
    assert "files" not in connect.connectors


async def test_a_connector_with_no_task_to_run_moves_once_it_stays_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("headrace.migration.cutover.TASKLESS_SETTLE_S", 0.2)
    connect, headrace = sides()
    headrace.resumed_state = TASKLESS
    await cutover(connect, headrace).move(MOVE)
    assert headrace.connectors["files"] == TASKLESS and "files" not in connect.connectors


async def test_a_connector_whose_tasks_never_start_does_not_count_as_running() -> None:
    connect, headrace = sides()
    headrace.resumed_state = STARTING
    with pytest.raises(MoveError, match="not RUNNING, every task on headrace within 1 s"):
        await cutover(connect, headrace).move(MOVE)
    assert "files" in connect.connectors  # committed once resumed: not deleted, nor undone


async def test_a_move_that_fails_before_the_resume_is_undone() -> None:
    connect, headrace = sides()
    headrace.fail = {"alter_offsets"}
    with pytest.raises(MoveError, match="undone: it is on Kafka Connect as it was"):
        await cutover(connect, headrace).move(MOVE)
    assert connect.connectors == {"files": RUNNING} and headrace.connectors == {}


async def test_what_could_not_be_undone_is_said_and_the_next_run_goes_on_from_there() -> None:
    connect, headrace = sides()
    headrace.fail = {"alter_offsets", "delete"}  # the side it goes to went away mid-move
    with pytest.raises(MoveError) as failed:
        await cutover(connect, headrace).move(MOVE)
    assert "its STOPPED copy stays on headrace" in str(failed.value)
    assert "run the same command again" in str(failed.value)
    assert connect.connectors == {"files": RUNNING} and headrace.connectors == {"files": STOPPED}

    headrace.fail = set()
    await cutover(connect, headrace).move(MOVE)  # again: it goes on with the copy there
    assert headrace.calls[-2:] == ["alter_offsets", "resume"] and connect.calls[-1] == "delete"
    assert headrace.offsets_of["files"] == OFFSETS


async def test_once_resumed_where_it_goes_a_failure_is_not_undone() -> None:
    connect, headrace = sides()
    headrace.resumed_state = FAILED
    with pytest.raises(MoveError, match="boom; run the same command again"):
        await cutover(connect, headrace).move(MOVE)
    assert connect.connectors == {"files": STOPPED}  # not resumed: records may be written there
    assert headrace.connectors == {"files": FAILED}


async def test_a_connector_that_cannot_move_is_not_touched() -> None:
    connect, headrace = sides()
    blocked = Move("files", "source", "X", "", {}, [], ("no plugin 'X'",))
    with pytest.raises(MoveError, match=r"^files: cannot move: no plugin 'X'$"):
        await cutover(connect, headrace).move(blocked)
    assert connect.calls == [] and headrace.calls == []


async def test_kept_where_it_came_from_it_stays_stopped_there() -> None:
    connect, headrace = sides()
    await cutover(connect, headrace, keep=True).move(MOVE)
    assert connect.connectors == {"files": STOPPED} and "delete" not in connect.calls


async def test_a_paused_connector_is_paused_again_when_its_move_is_undone() -> None:
    connect, headrace = sides()
    connect.connectors["files"] = PAUSED
    headrace.fail = {"alter_offsets"}
    with pytest.raises(MoveError, match="undone"):
        await cutover(connect, headrace).move(MOVE)
    assert connect.connectors == {"files": PAUSED} and connect.calls == ["stop", "pause"]


async def test_a_resume_whose_answer_was_lost_but_which_was_applied_is_not_undone() -> None:
    connect, headrace = sides()
    resume = headrace.resume

    async def applied_then_lost(name: str) -> None:
        await resume(name)
        raise RestError("headrace", "resume", None, "no answer: timed out")

    headrace.resume = applied_then_lost  # type: ignore[method-assign]
    with pytest.raises(MoveError, match="run the same command again"):
        await cutover(connect, headrace).move(MOVE)
    # Running on the side it goes to: resuming it where it came from too would repeat records.
    assert connect.connectors == {"files": STOPPED} and headrace.connectors == {"files": RUNNING}
    await cutover(connect, headrace).move(MOVE)  # again: it finishes
    assert connect.connectors == {}


async def test_old_offsets_on_the_side_it_goes_to_do_not_outlive_the_move() -> None:
    connect, headrace = sides()
    connect.offsets_of["files"] = []  # nothing stored yet where it comes from
    headrace.offsets_of["files"] = [{"partition": {"filename": "old"}, "offset": {"x": 1}}]
    await cutover(connect, headrace).move(MOVE)
    assert "files" not in headrace.offsets_of


async def test_a_failure_message_never_holds_a_secret() -> None:
    connect, headrace = sides()
    headrace.fail = {"create"}
    secret = Move("files", "source", "F", "1", {"password": "hunter22"}, [], secrets=("hunter22",))
    headrace.name = "headrace refused 'hunter22', and"
    with pytest.raises(MoveError) as failed:
        await cutover(connect, headrace).move(secret)
    assert "hunter22" not in str(failed.value) and "[hidden]" in str(failed.value)
