"""Back-pressure: batches and bytes in flight are bounded, and slots are always given back."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from headrace.executor.admission import Admission, Busy, Limits
from headrace.executor.metrics import LabelBudget


def test_batches_beyond_the_limit_are_turned_away() -> None:
    admission = Admission(Limits(max_batches=2, max_bytes=1000))
    with ExitStack() as held:
        held.enter_context(admission.admit(10))
        held.enter_context(admission.admit(10))
        with pytest.raises(Busy, match="2 batches"):
            held.enter_context(admission.admit(10))
        assert admission.in_flight == (2, 20)
    assert admission.in_flight == (0, 0)


def test_bytes_beyond_the_limit_are_turned_away() -> None:
    admission = Admission(Limits(max_batches=10, max_bytes=100))
    with (
        admission.admit(60),
        pytest.raises(Busy, match="limit 10 batches, 100 bytes"),
        admission.admit(60),
    ):
        pass


def test_one_batch_of_any_size_is_let_in_when_nothing_else_is_in_flight() -> None:
    admission = Admission(Limits(max_batches=2, max_bytes=100))
    with admission.admit(500):
        assert admission.in_flight == (1, 500)


def test_a_failed_write_gives_its_slot_back() -> None:
    admission = Admission(Limits(max_batches=1))
    with pytest.raises(RuntimeError), admission.admit(10):
        raise RuntimeError("spark fell over")
    with admission.admit(10):
        assert admission.in_flight == (1, 10)


@pytest.mark.parametrize("limits", [{"max_batches": 0}, {"max_bytes": 0}])
def test_limits_must_admit_something(limits: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Limits(**limits)


@pytest.mark.parametrize("size", [-1, 2**40])
def test_a_size_no_batch_may_have_is_never_admitted(size: int) -> None:
    admission = Admission(Limits(max_batches=2, max_bytes=1000))
    with pytest.raises(ValueError, match=f"a batch of {size} bytes"), admission.admit(size):
        pass
    assert admission.in_flight == (0, 0)
    with admission.admit(1000):  # the bound itself is admissible, and still counted
        assert admission.in_flight == (1, 1000)


def test_metric_labels_are_the_first_connectors_named_and_then_other() -> None:
    budget = LabelBudget(2)
    assert [budget.label(c) for c in ("a", "b", "a", "c", "d", "b")] == [
        "a",
        "b",
        "a",
        "other",
        "other",
        "b",
    ]
