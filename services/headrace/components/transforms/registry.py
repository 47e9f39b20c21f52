"""The built-in transformations and predicates by name: Connect's class names
(``org.apache.kafka.connect.transforms.InsertField$Value``) and the short aliases without the
package (``InsertField$Value``), each giving a new, unconfigured instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from headrace.components import extensions
from headrace.components.transforms.base import Predicate, Side, Transformation
from headrace.components.transforms.cast import Cast
from headrace.components.transforms.fields import InsertField, MaskField, ReplaceField, ValueToKey
from headrace.components.transforms.headers import DropHeaders, HeaderFrom, InsertHeader
from headrace.components.transforms.metadata import SetSchemaMetadata
from headrace.components.transforms.predicates import (
    HasHeaderKey,
    RecordIsTombstone,
    TopicNameMatches,
)
from headrace.components.transforms.routing import Filter, RegexRouter
from headrace.components.transforms.shape import ExtractField, Flatten, HoistField
from headrace.components.transforms.timestamps import TimestampConverter, TimestampRouter

TRANSFORMS_PACKAGE = "org.apache.kafka.connect.transforms."
PREDICATES_PACKAGE = "org.apache.kafka.connect.transforms.predicates."

_SIDED = (
    Cast,
    ExtractField,
    Flatten,
    HeaderFrom,
    HoistField,
    InsertField,
    MaskField,
    ReplaceField,
    SetSchemaMetadata,
    TimestampConverter,
)
_UNSIDED = (DropHeaders, Filter, InsertHeader, RegexRouter, TimestampRouter, ValueToKey)


def _transforms() -> dict[str, Callable[[], Transformation]]:
    found: dict[str, Callable[[], Transformation]] = {}
    for sided in _SIDED:
        for side in Side:
            alias = f"{sided.NAME}${side.value}"
            found[alias] = found[TRANSFORMS_PACKAGE + alias] = partial(sided, side)
    for unsided in _UNSIDED:
        found[unsided.NAME] = found[TRANSFORMS_PACKAGE + unsided.NAME] = unsided
    return found


def _predicates() -> dict[str, Callable[[], Predicate]]:
    found: dict[str, Callable[[], Predicate]] = {}
    for predicate in (HasHeaderKey, RecordIsTombstone, TopicNameMatches):
        found[predicate.NAME] = found[PREDICATES_PACKAGE + predicate.NAME] = predicate
    return found


TRANSFORMS: Mapping[str, Callable[[], Transformation]] = _transforms()
"""Every name a ``transforms.<alias>.type`` may give, to a factory of the transformation."""
PREDICATES: Mapping[str, Callable[[], Predicate]] = _predicates()
"""Every name a ``predicates.<alias>.type`` may give, to a factory of the predicate."""


def new_transform(type_name: str) -> Transformation:
    """A new transformation of the named type: a plugin's this process loaded, else the
    built-in one; LookupError saying why there is none."""
    loaded = extensions.find("transformation", type_name)
    if loaded is not None:
        transformation: Transformation = loaded()
        return transformation
    factory = TRANSFORMS.get(type_name.strip())
    if factory is None:
        raise LookupError(_unknown("transform", type_name, TRANSFORMS, PREDICATES))
    return factory()


def new_predicate(type_name: str) -> Predicate:
    """A new predicate of the named type: a plugin's this process loaded, else the built-in
    one; LookupError saying why there is none."""
    loaded = extensions.find("predicate", type_name)
    if loaded is not None:
        predicate: Predicate = loaded()
        return predicate
    factory = PREDICATES.get(type_name.strip())
    if factory is None:
        raise LookupError(_unknown("predicate", type_name, PREDICATES, TRANSFORMS))
    return factory()


def _unknown(kind: str, name: str, own: Mapping[str, object], other: Mapping[str, object]) -> str:
    name = name.strip()
    if name in other:
        return f"{name!r} is a {'predicate' if kind == 'transform' else 'transform'}, not a {kind}"
    short = name.removeprefix(TRANSFORMS_PACKAGE)
    variants = [alias for alias in own if alias.startswith(f"{short}$")]
    if variants:
        return f"{kind} {name!r} needs a variant: {' or '.join(sorted(variants))}"
    known = ", ".join(sorted(n for n in own if "." not in n))
    return f"unknown {kind} {name!r} (known: {known})"
