"""The nemesis's plan: a seed names a run's faults."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.chaos import nemesis


def test_a_seed_names_its_faults_and_another_seed_others() -> None:
    assert nemesis.plan(7, 300) == nemesis.plan(7, 300)
    assert nemesis.plan(7, 300) != nemesis.plan(8, 300)


@settings(max_examples=50)
@given(st.integers(0, 2**32), st.floats(30, 3600))
def test_every_fault_fits_the_run_and_hits_what_its_kind_can(seed: int, duration: float) -> None:
    faults = nemesis.plan(seed, duration)
    assert [f.at_s for f in faults] == sorted(f.at_s for f in faults)
    for fault in faults:
        assert 0 < fault.at_s < duration
        assert fault.target in nemesis.targets(fault.kind)
        low, high = nemesis.KINDS[fault.kind][1]
        assert low <= fault.hold_s <= high


def test_a_long_run_has_every_kind_of_fault_and_overlapping_ones() -> None:
    faults = nemesis.plan(1, 600)
    assert {f.kind for f in faults} == set(nemesis.KINDS)
    assert {nemesis.BROKER, nemesis.PLUGIN} <= {f.target for f in faults}
    overlapping = [a for a, b in itertools.pairwise(faults) if b.at_s < a.at_s + a.hold_s]
    assert overlapping


def test_a_plugin_process_is_picked_by_the_fault_s_own_seed() -> None:
    fault = nemesis.plan(3, 120)[0]
    assert nemesis.pick(fault, [30, 10, 20]) == nemesis.pick(fault, [20, 30, 10])
    assert nemesis.pick(fault, []) is None
