"""The assignments topic: a generation survives its record, each generation is its own record,
and the history keeps the last ones without ever losing the latest."""

from __future__ import annotations

from dataclasses import replace

from headrace.coordinator.assignmentlog import (
    HISTORY,
    AssignmentLog,
    Generation,
    GenerationForgotten,
    GenerationRecorded,
    History,
    apply,
    decode,
    encode,
    key,
)
from headrace.coordinator.deletions import PendingDeletion
from headrace.core.model.structs import Revocation, WorkUnit
from headrace.core.storage import told
from headrace.core.storage.topiclog import MemoryTopic, memory_logs

A, A0, B = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit.of("b")


def generation(number: int) -> Generation:
    return Generation(
        number,
        members={"w1": {A: "i1", A0: "i1"}, "w2": {}},
        revocations={
            "w2": frozenset({Revocation(B, deleted=True, incarnation="i0"), Revocation(A0)})
        },
        departed={"w3": {WorkUnit("a", 1): "i1"}},
        pending=(PendingDeletion(B, "i0", {"connector.class": "X"}, {}, "w2"),),
        recorded_at=1700000000.5,
        coordinator="c1",
    )


def test_a_generation_reads_back_as_it_was_written() -> None:
    (record,) = encode(generation(3))
    assert record[0] == key(3)
    assert decode(*record) == GenerationRecorded(generation(3))


def test_a_generation_past_the_history_forgets_the_oldest() -> None:
    records = encode(generation(HISTORY + 7))
    assert [k for k, _ in records] == [key(HISTORY + 7), key(7)]
    assert decode(*records[1]) == GenerationForgotten(7)


def test_a_deletion_told_is_held_until_a_generation_no_longer_owes_it() -> None:
    instance = (B, "i0")
    record = told.encode(instance, "w2")
    state = apply(History(), decode(*record))  # type: ignore[arg-type]
    assert [(t.instance, t.worker_id) for t in state.told.values()] == [(instance, "w2")]
    # A generation that still owes it keeps the record; one that does not tombstones it.
    assert [k for k, _ in encode(generation(3), state.told)] == [key(3)]
    later = replace(generation(4), pending=())
    records = encode(later, state.told)
    assert records == [(key(4), records[0][1]), (record[0], None)]
    for r in records:
        state = apply(state, decode(*r))  # type: ignore[arg-type]
    assert len(state.told) == 0 and state.last == later


def test_keys_of_other_protocols_are_ignored() -> None:
    assert decode("generation", b"\x08\x01") is None  # the record of an older layout


def test_the_history_is_the_generations_kept_and_the_last_is_the_newest() -> None:
    state = History()
    for n in range(1, HISTORY + 6):
        for record in encode(generation(n)):
            event = decode(*record)
            assert event is not None
            state = apply(state, event)
    assert len(state.generations) == HISTORY
    assert state.last == generation(HISTORY + 5)
    assert [g.number for g in state.latest(3)] == [HISTORY + 3, HISTORY + 4, HISTORY + 5]


async def test_a_restarted_coordinator_resumes_from_the_last_generation_appended() -> None:
    topic = MemoryTopic("assignments")
    first = AssignmentLog(memory_logs(topic))
    await first.start()
    assert first.last is None
    await first.append(generation(1))
    await first.append(generation(2))
    await first.close()
    again = AssignmentLog(memory_logs(topic))
    await again.start()
    assert again.last == generation(2)
    assert [g.number for g in again.history.latest(10)] == [1, 2]
    await again.close()
