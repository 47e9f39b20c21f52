"""The assignments topic: a generation survives the record, and the fold keeps the latest."""

from __future__ import annotations

from headrace.coordinator.assignmentlog import (
    AssignmentLog,
    Generation,
    GenerationRecorded,
    apply,
    decode,
    encode,
)
from headrace.coordinator.assignor import Plan
from headrace.core.structs import Revocation, WorkUnit
from headrace.core.topiclog import MemoryTopic, memory_logs

A, A0, B = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit.of("b")


def generation(number: int) -> Generation:
    return Generation(
        number,
        Plan(
            {"w1": frozenset({A, A0}), "w2": frozenset()},
            {"w2": frozenset({Revocation(B, deleted=True), Revocation(A0, deleted=False)})},
        ),
    )


def test_a_generation_reads_back_as_it_was_written() -> None:
    key, value = encode(generation(3))
    assert decode(key, value) == GenerationRecorded(generation(3))


def test_a_tombstone_records_nothing() -> None:
    assert decode("generation", None) is None


def test_the_latest_generation_is_the_state() -> None:
    state = None
    for n in (1, 2, 3):
        state = apply(state, GenerationRecorded(generation(n)))
    assert state == generation(3)


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
    await again.close()
