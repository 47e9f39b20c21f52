"""A replay holds the cyclic collector off, and freezes what it built once every replay ended."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from headrace.core.storage.replay import collector_held_off, replaying


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    """The test process's collector as it was: on, nothing frozen by these tests."""
    gc.enable()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_collector_is_off_during_a_replay_and_skips_its_state_after() -> None:
    with replaying("configs"):
        assert not gc.isenabled()
        state = [[n] for n in range(1_000)]  # tracked containers, as a fold's state is
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(state)


def test_overlapping_replays_keep_it_off_until_the_last_ends() -> None:
    first, second = collector_held_off(), collector_held_off()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_replay_that_fails_turns_the_collector_back_on() -> None:
    with pytest.raises(RuntimeError), replaying("status"):
        raise RuntimeError("the broker went away")
    assert gc.isenabled()


def test_a_process_that_ran_without_the_collector_keeps_it_off() -> None:
    gc.disable()
    with replaying("assignments"):
        pass
    assert not gc.isenabled()
