"""A connector's transformation chain, read from its configuration with Connect's keys.

    transforms=<alias>,...              the transformations, in the order they run
    transforms.<alias>.type             a class name or alias from the registry (required)
    transforms.<alias>.plugin.version   which version of that type (KIP-891; the latest if unset)
    transforms.<alias>.<key>            the transformation's own keys
    transforms.<alias>.predicate        a predicate alias: run only on records it matches
    transforms.<alias>.negate           true: run only on records it does not match
    predicates=<alias>,...              the predicates transformations may refer to
    predicates.<alias>.type             a class name or alias from the registry (required)
    predicates.<alias>.plugin.version   which version of that type
    predicates.<alias>.<key>            the predicate's own keys

``parse_chain`` refuses, with the full key of each problem: an alias listed twice or empty, a
missing or unknown type, a key the transformation or predicate does not define, a value it
refuses, a predicate that is not declared, and ``negate`` without ``predicate``. Predicates
declared and used by none are configured (so checked) all the same, as in Connect.

The registry gives the class a type names: one loaded into this process from the plugin path
(``headrace.components.extensions``), else the built-in one. Which version a ``plugin.version``
allows is the worker's and the config service's to settle (``headrace.components.versions``).

``transform_keys`` says which keys of a connector configuration the chain reads, so a validator
can refuse the rest of ``transforms.*`` and ``predicates.*`` (``predicates.q.pattern`` when ``q``
is not declared, say), which ``unclaimed_keys`` lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from headrace.components.transforms.base import Predicate, R, Transformation
from headrace.components.transforms.configs import InvalidConfig
from headrace.components.transforms.registry import new_predicate, new_transform
from headrace.core.model.plugins import VERSION_KEY
from headrace.sdk.errors import ConfigException, DataError

TRANSFORMS = "transforms"
PREDICATES = "predicates"
IMPLICIT_KEYS = ("type", "predicate", "negate", VERSION_KEY)  # the version: runtime.components

Problems = list[tuple[str | None, str]]
P = TypeVar("P", Transformation, Predicate)


@dataclass(frozen=True)
class Stage:
    """One configured transformation, and the predicate (if any) that guards it."""

    alias: str
    type_name: str
    transformation: Transformation
    predicate_alias: str | None = None
    predicate: Predicate | None = None
    negate: bool = False

    def apply(self, record: R) -> R | None:
        """The transformed record, the record itself when the predicate says not to run, or
        None to drop it. A DataError names this stage's alias."""
        try:
            if self.predicate is not None and self.predicate.test(record) == self.negate:
                return record
            return self.transformation.apply(record)
        except DataError as exc:
            raise DataError(f"transform {self.alias!r} ({self.type_name}): {exc}") from exc


@dataclass(frozen=True)
class TransformChain:
    """The stages in order; a record dropped by one reaches none of the next."""

    stages: tuple[Stage, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.stages

    @property
    def takes_batches(self) -> bool:
        """Whether a batch's columns may pass as they are: transforms take one record at a
        time, so only with none to apply."""
        return not self.stages

    def apply(self, record: R) -> R | None:
        """The record after every stage, or None when one dropped it."""
        current: R | None = record
        for stage in self.stages:
            if current is None:
                break
            current = stage.apply(current)
        return current

    def close(self) -> None:
        """Closes every transformation and predicate (each predicate once)."""
        predicates = {id(s.predicate): s.predicate for s in self.stages if s.predicate}
        for stage in self.stages:
            stage.transformation.close()
        for predicate in predicates.values():
            predicate.close()


def parse_chain(config: Mapping[str, str]) -> TransformChain:
    """The chain a connector configuration describes; InvalidConfig (a ConfigException) naming
    the full key of every problem."""
    problems: Problems = []
    transform_aliases = _aliases(config, TRANSFORMS, problems)
    predicate_aliases = _aliases(config, PREDICATES, problems)
    predicates: dict[str, Predicate] = {}
    for alias in predicate_aliases:
        own = _own_keys(config, PREDICATES, alias, predicate_aliases)
        predicate = _predicate(alias, own, problems)
        if predicate is not None:
            predicates[alias] = predicate
    stages = []
    for alias in transform_aliases:
        own = _own_keys(config, TRANSFORMS, alias, transform_aliases)
        stage = _stage(alias, own, set(predicate_aliases), predicates, problems)
        if stage is not None:
            stages.append(stage)
    if problems:
        raise InvalidConfig(problems)
    return TransformChain(tuple(stages))


def transform_keys(config: Mapping[str, str]) -> set[str]:
    """The keys of ``config`` the chain reads: ``transforms``, ``predicates`` and every key
    under a listed alias (whether or not the chain accepts them)."""
    keys = {k for k in (TRANSFORMS, PREDICATES) if k in config}
    for namespace in (TRANSFORMS, PREDICATES):
        aliases = _aliases(config, namespace, [])
        for alias in aliases:
            prefix = f"{namespace}.{alias}."
            keys.update(prefix + k for k in _own_keys(config, namespace, alias, aliases))
    return keys


def unclaimed_keys(config: Mapping[str, str]) -> set[str]:
    """Keys under ``transforms.`` or ``predicates.`` that belong to no listed alias."""
    claimed = transform_keys(config)
    return {
        k for k in config if k.startswith((f"{TRANSFORMS}.", f"{PREDICATES}.")) and k not in claimed
    }


def configured_aliases(config: Mapping[str, str], namespace: str) -> list[str]:
    """The aliases listed under ``transforms`` or ``predicates``, each once, in order."""
    return _aliases(config, namespace, [])


def own_keys(config: Mapping[str, str], namespace: str, alias: str) -> dict[str, str]:
    """The keys of one listed alias (``transforms.<alias>.*``), prefix removed, those the
    framework reads (``type``, ``predicate``, ``negate``, the version) included."""
    return _own_keys(config, namespace, alias, configured_aliases(config, namespace))


def _aliases(config: Mapping[str, str], key: str, problems: Problems) -> list[str]:
    raw = config.get(key, "")
    if not raw.strip():
        return []
    aliases: list[str] = []
    for alias in (part.strip() for part in raw.split(",")):
        if not alias:
            problems.append((key, f"has an empty alias in {raw!r}"))
        elif alias in aliases:
            problems.append((key, f"lists the alias {alias!r} twice"))
        else:
            aliases.append(alias)
    return aliases


def _own_keys(
    config: Mapping[str, str], namespace: str, alias: str, aliases: list[str]
) -> dict[str, str]:
    """The keys under ``<namespace>.<alias>.``, prefix removed; a key under a longer alias
    that starts with this one (``a.b`` for ``a``) belongs to that alias."""
    prefix = f"{namespace}.{alias}."
    longer = [f"{namespace}.{a}." for a in aliases if a.startswith(f"{alias}.")]
    return {
        key.removeprefix(prefix): value
        for key, value in config.items()
        if key.startswith(prefix) and not key.startswith(tuple(longer))
    }


def _predicate(alias: str, own: dict[str, str], problems: Problems) -> Predicate | None:
    prefix = f"{PREDICATES}.{alias}."
    type_name = own.pop("type", None)
    own.pop(VERSION_KEY, None)
    return _configured("predicate", new_predicate, type_name, own, prefix, problems)


def _stage(
    alias: str,
    own: dict[str, str],
    declared: set[str],
    predicates: dict[str, Predicate],
    problems: Problems,
) -> Stage | None:
    prefix = f"{TRANSFORMS}.{alias}."
    type_name, predicate_alias, negate_text, _ = (own.pop(k, None) for k in IMPLICIT_KEYS)
    negate = False
    if negate_text is not None:
        if negate_text.strip().lower() not in ("true", "false"):
            problems.append((prefix + "negate", f"{negate_text!r} is not true or false"))
        negate = negate_text.strip().lower() == "true"
        if predicate_alias is None:
            problems.append(
                (prefix + "negate", f"is set, but there is no {prefix}predicate to negate")
            )
    if predicate_alias is not None:
        predicate_alias = predicate_alias.strip()
        if predicate_alias not in declared:
            problems.append(
                (
                    prefix + "predicate",
                    f"predicate {predicate_alias!r} is not declared in {PREDICATES}",
                )
            )
    transformation = _configured("transform", new_transform, type_name, own, prefix, problems)
    if transformation is None or type_name is None:  # no transformation without a type_name
        return None
    predicate = predicates.get(predicate_alias) if predicate_alias is not None else None
    return Stage(alias, type_name.strip(), transformation, predicate_alias, predicate, negate)


def _configured(
    kind: str,
    new: Callable[[str], P],
    type_name: str | None,
    own: dict[str, str],
    prefix: str,
    problems: Problems,
) -> P | None:
    """A new ``kind`` of ``type_name`` configured with ``own``; None, with the problems recorded
    under ``prefix``, when the type is missing or unknown or the plugin refuses its keys."""
    if type_name is None:
        problems.append((prefix + "type", f"is required: the class or alias of the {kind}"))
        return None
    try:
        plugin = new(type_name)
    except LookupError as exc:
        problems.append((prefix + "type", str(exc.args[0])))
        return None
    return plugin if _configure(plugin, own, prefix, problems) else None


def _configure(
    plugin: Transformation | Predicate, own: dict[str, str], prefix: str, problems: Problems
) -> bool:
    """Configures ``plugin``, recording its problems under ``prefix``; whether it succeeded."""
    try:
        plugin.configure(own)
    except InvalidConfig as exc:
        problems.extend(exc.under(prefix, prefix.rstrip(".")).problems)
        return False
    except ConfigException as exc:
        # A plugin's own ConfigException names its key as Connect's do ("field: ..."): filed
        # under the full key when that is one of its keys.
        key, _, rest = str(exc).partition(":")
        if key.strip() in own and rest:
            problems.append((prefix + key.strip(), rest.strip()))
        else:
            problems.append((prefix.rstrip("."), str(exc)))
        return False
    return True
