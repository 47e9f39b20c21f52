"""The embedded broker's set-up that needs no broker."""

from __future__ import annotations

from headrace.cli.kafka import new_cluster_id


def test_cluster_ids_never_look_like_an_option() -> None:
    # One random id in 64 used to start with "-", and the storage tool refused to format.
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 for i in ids)
