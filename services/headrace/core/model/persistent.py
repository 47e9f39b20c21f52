"""Persistent maps for the pure folds of the topics (configs, status, source offsets).

A fold returns a new state for every record it reads. With plain dicts that is a copy of the whole
state per record, and a replay of n records costs O(n^2); with a persistent map (``immutables``, a
HAMT in C) each new state shares all but O(log n) of the one before, and a replay costs
O(n log n). The folds accept any mapping as their starting state and return these maps.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

import immutables

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def persistent(mapping: Mapping[K, V]) -> immutables.Map[K, V]:
    """``mapping`` as a persistent map (itself, when it is one already)."""
    return mapping if isinstance(mapping, immutables.Map) else immutables.Map(mapping)


def with_item(mapping: Mapping[K, V], key: K, value: V) -> immutables.Map[K, V]:
    """A new map with ``key`` set to ``value``."""
    return persistent(mapping).set(key, value)


def without_item(mapping: Mapping[K, V], key: K) -> immutables.Map[K, V]:
    """A new map without ``key`` (the same map when it has no such key)."""
    current = persistent(mapping)
    return current.delete(key) if key in current else current
