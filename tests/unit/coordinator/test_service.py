"""The coordinator's gRPC edge: protobuf in, the group's events out, and back."""

from __future__ import annotations

import asyncio

from headrace.coordinator.group import Beat, DeletionsDone, Joined, Outbox, RevocationsDone
from headrace.coordinator.service import (
    coordinator_message,
    joined,
    merged,
    names_worker,
    worker_event,
)
from headrace.core.model import wire
from headrace.core.model.structs import (
    AssignedUnit,
    AssignmentUpdate,
    Cleanup,
    Revocation,
    WorkUnit,
)
from headrace.v1 import coordinator_pb2, events_pb2


def test_a_join_becomes_the_group_event_with_the_units_it_runs() -> None:
    outbox: Outbox = asyncio.Queue()
    join = coordinator_pb2.Join(
        worker_id="w1",
        running=[
            events_pb2.RunningUnit(
                unit=events_pb2.WorkUnit(connector="a", task=-1), incarnation="i"
            ),
            events_pb2.RunningUnit(unit=events_pb2.WorkUnit(connector="a"), incarnation="i"),
        ],
    )
    assert joined(join, outbox) == Joined(
        "w1", {WorkUnit.of("a"): "i", WorkUnit("a", 0): "i"}, outbox
    )


def test_only_a_join_that_names_its_worker_opens_a_stream() -> None:
    assert names_worker(coordinator_pb2.WorkerMessage(join=coordinator_pb2.Join(worker_id="w1")))
    assert not names_worker(coordinator_pb2.WorkerMessage(join=coordinator_pb2.Join()))
    assert not names_worker(coordinator_pb2.WorkerMessage(heartbeat=coordinator_pb2.Heartbeat()))


def test_later_messages_become_beats_and_acknowledgements() -> None:
    beat = coordinator_pb2.WorkerMessage(heartbeat=coordinator_pb2.Heartbeat())
    done = coordinator_pb2.WorkerMessage(
        revocations_done=coordinator_pb2.RevocationsDone(generation=4)
    )
    deleted = coordinator_pb2.WorkerMessage(
        deletions_done=coordinator_pb2.DeletionsDone(
            units=[wire.instance_to_pb((WorkUnit("a", 1), "i1"))]
        )
    )
    assert worker_event("w1", beat) == Beat("w1")
    assert worker_event("w1", done) == RevocationsDone("w1", 4)
    assert worker_event("w1", deleted) == DeletionsDone("w1", frozenset({(WorkUnit("a", 1), "i1")}))
    join = coordinator_pb2.WorkerMessage(join=coordinator_pb2.Join(worker_id="w1"))
    assert worker_event("w1", join) is None  # a second join on one stream is ignored


def test_an_update_goes_out_as_an_assignment_the_worker_reads_back_unchanged() -> None:
    update = AssignmentUpdate(
        5,
        (AssignedUnit(WorkUnit("a", 0), {"connector.class": "X"}, {"t": "0"}, "i1"),),
        (Revocation(WorkUnit.of("b"), deleted=True, incarnation="i0"),),
        (Cleanup(WorkUnit("c", 2), "i9", {"connector.class": "Y"}, {"t": "2"}),),
    )
    message = coordinator_message(update)
    assert message.WhichOneof("kind") == "assignment"
    assert wire.assignment_from_pb(message.assignment) == update


async def test_an_update_that_comes_while_an_acknowledgement_is_sent_still_goes_out() -> None:
    outbox: Outbox = asyncio.Queue()
    acks: asyncio.Queue[int] = asyncio.Queue()
    stream = merged(outbox, acks)
    acks.put_nowait(1)
    first = await anext(stream)
    assert first.heartbeat_ack.sequence == 1
    update = AssignmentUpdate(7, (AssignedUnit(WorkUnit.of("a"), {"k": "v"}, {}, "i1"),))
    outbox.put_nowait(update)
    for _ in range(5):
        await asyncio.sleep(0)  # the stream is still busy sending the acknowledgement
    outbox.put_nowait(None)
    rest = [m async for m in stream]
    assert [wire.assignment_from_pb(m.assignment) for m in rest] == [update]
