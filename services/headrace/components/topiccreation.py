"""Topics a source connector creates as it first writes to them (KIP-158). Pure: which settings
a topic gets, from the connector's config.

| key | meaning |
| --- | --- |
| ``topic.creation.groups`` | the groups besides ``default``, in the order they are matched |
| ``topic.creation.<group>.include`` | names or Java regexes (whole names) of the group's topics |
| ``topic.creation.<group>.exclude`` | names or regexes taken out again (they win over include) |
| ``topic.creation.<group>.replication.factor`` | -1 (the broker's default) or at least 1 |
| ``topic.creation.<group>.partitions`` | -1 (the broker's default) or at least 1 |
| ``topic.creation.<group>.<topic config>`` | any other topic config, ``cleanup.policy`` ... |

A topic goes to the first group in ``topic.creation.groups`` that includes and does not exclude
it, else to ``default``, which takes every topic and must give both a replication factor and a
number of partitions; another group leaves out what it does not set, and takes it from default.
Topic creation is on for a connector when any ``topic.creation.`` key is in its config; only
topics that do not exist yet are created. A sink connector creates no topics.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from headrace.components.java.regex import JavaRegex, compile_java
from headrace.sdk.errors import ConfigException

PREFIX = "topic.creation."
GROUPS = PREFIX + "groups"
DEFAULT = "default"
REPLICATION = "replication.factor"
PARTITIONS = "partitions"
INCLUDE, EXCLUDE = "include", "exclude"


@dataclass(frozen=True)
class TopicSettings:
    """How a topic is created: -1 leaves the count to the broker."""

    partitions: int
    replication_factor: int
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Group:
    name: str
    include: tuple[JavaRegex, ...]
    exclude: tuple[JavaRegex, ...]
    settings: TopicSettings

    def takes(self, topic: str) -> bool:
        matched = any(p.fullmatch(topic) for p in self.include)
        return matched and not any(p.fullmatch(topic) for p in self.exclude)


@dataclass(frozen=True)
class TopicCreation:
    """The connector's groups, in matching order, ``default`` last."""

    groups: tuple[Group, ...]

    def settings_for(self, topic: str) -> TopicSettings:
        return next(g.settings for g in self.groups if g.takes(topic))


def topic_creation(config: Mapping[str, str]) -> TopicCreation | None:
    """The connector's topic creation; None when it asks for none. ConfigException naming the
    key of each value that is not one."""
    if not any(k.startswith(PREFIX) for k in config):
        return None
    named = [g.strip() for g in config.get(GROUPS, "").split(",") if g.strip()]
    if DEFAULT in named:
        raise ConfigException(f"{GROUPS}: {DEFAULT!r} is always there; name only the others")
    if len(set(named)) != len(named):
        raise ConfigException(f"{GROUPS}: a group is named twice in {config[GROUPS]!r}")
    known = {GROUPS} | {f"{PREFIX}{g}." for g in [*named, DEFAULT]}
    for key in config:
        if key.startswith(PREFIX) and not any(key == k or key.startswith(k) for k in known):
            raise ConfigException(f"{key}: its group is not in {GROUPS} (nor {DEFAULT})")
    default = _settings(config, DEFAULT, None)
    groups = [
        Group(
            g,
            _patterns(config, g, INCLUDE),
            _patterns(config, g, EXCLUDE),
            _settings(config, g, default),
        )
        for g in named
    ]
    for key in (f"{PREFIX}{DEFAULT}.{INCLUDE}", f"{PREFIX}{DEFAULT}.{EXCLUDE}"):
        if key in config:
            raise ConfigException(f"{key}: the {DEFAULT} group takes every topic the others do not")
    catch_all = Group(DEFAULT, (compile_java("(?s).*"),), (), default)
    return TopicCreation((*groups, catch_all))


def _settings(
    config: Mapping[str, str], group: str, default: TopicSettings | None
) -> TopicSettings:
    prefix = f"{PREFIX}{group}."
    counts = {}
    for name in (PARTITIONS, REPLICATION):
        key, raw = prefix + name, config.get(prefix + name, "").strip()
        if not raw:
            if default is None:
                raise ConfigException(f"{key}: required once topic creation is configured")
            counts[name] = getattr(default, name.replace(".", "_"))
            continue
        if not re.fullmatch(r"-?\d+", raw) or int(raw) == 0 or int(raw) < -1:
            raise ConfigException(f"{key}: {raw!r} is neither -1 nor a whole number above 0")
        counts[name] = int(raw)
    own = {
        k.removeprefix(prefix): v
        for k, v in config.items()
        if k.startswith(prefix)
        and k.removeprefix(prefix) not in (PARTITIONS, REPLICATION, INCLUDE, EXCLUDE)
    }
    inherited = dict(default.configs) if default is not None else {}
    return TopicSettings(counts[PARTITIONS], counts[REPLICATION], {**inherited, **own})


def _patterns(config: Mapping[str, str], group: str, which: str) -> tuple[JavaRegex, ...]:
    key = f"{PREFIX}{group}.{which}"
    found = []
    for raw in config.get(key, "").split(","):
        if not raw.strip():
            continue
        try:
            found.append(compile_java(raw.strip()))
        except ValueError as exc:
            raise ConfigException(f"{key}: {raw.strip()!r} is not a valid regex: {exc}") from None
    if which == INCLUDE and not found:
        raise ConfigException(f"{key}: a group needs the topics it includes")
    return tuple(found)
