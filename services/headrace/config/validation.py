"""The problems a request can have, and the checks that are not about a config's keys (a name,
a record's size, whether a connector or task exists): pure, so every entry point shares them.

Each problem names the key and what is wrong with it. The kind tells the API layer which status
to answer with (gRPC code or HTTP status); nothing is written when there is a problem. A config's
keys are checked by ``framework`` (the framework's) and the plugin's own validate.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from headrace.components.java.regex import whole_match_java
from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState
from headrace.core.model.offsets import GROUP_OVERRIDE, sink_group_id
from headrace.core.model.plugins import PluginDescriptor


class Problem(Enum):
    INVALID = "invalid"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    NO_PLUGIN = "no_plugin"  # the config names a plugin or version that is not installed
    PRECONDITION = "precondition"  # valid, but not in the state the connector is in
    UNAUTHENTICATED = "unauthenticated"  # an internal call without a valid signature
    FORBIDDEN = "forbidden"  # a call the operator's settings turn off (topic tracking)
    UNAVAILABLE = "unavailable"  # a check it needs could not be made now: ask again
    REFUSED = "refused"  # the connector's own code refused it (KIP-875's alterOffsets)


class ConfigRejected(Exception):
    """A request that would change nothing because its input is wrong."""

    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.message = message


@dataclass(frozen=True)
class Accepted:
    """A config ready to store, with the plugin it resolved to."""

    name: str
    config: Mapping[str, str]
    plugin: PluginDescriptor


MAX_NAME_CHARS = 249
"""The longest connector name: Kafka's own bound on a topic name. A name becomes part of
group ids, transactional ids, status keys and paths; past this it is no name anyone types."""

# Unicode's "other" characters (control, format, surrogate, private use, unassigned) and its
# line and paragraph separators: invisible, or shown as something else than they are. A name
# with U+202E (right-to-left override) reads backwards in a console or a log.
_UNSEEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def check_name(name: str) -> None:
    if not name or not name.strip():
        raise ConfigRejected(Problem.INVALID, "name: a connector name must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise ConfigRejected(
            Problem.INVALID,
            f"name: {len(name)} characters; a connector name has at most {MAX_NAME_CHARS}",
        )
    if name != name.strip():
        raise ConfigRejected(Problem.INVALID, f"name: {name!r} has leading or trailing spaces")
    unseen = sorted({f"U+{ord(c):04X}" for c in name if unicodedata.category(c) in _UNSEEN})
    if unseen:
        raise ConfigRejected(
            Problem.INVALID,
            f"name: {name!r} contains control, format or unassigned characters "
            f"({', '.join(unseen)})",
        )
    # Plugins and the runtime use the name in paths (markers, folders): as one path component
    # it must never climb out of, or into another part of, the folder it is put in.
    if any(sep in name for sep in ("/", "\\")) or name in (".", ".."):
        raise ConfigRejected(
            Problem.INVALID, f"name: {name!r} may not contain / or \\ nor be . or .."
        )


def check_topics_regex(regex: str) -> None:
    """Refuses a ``topics.regex`` the sink's tasks could not subscribe with, read as Connect
    reads it: a Java regular expression."""
    try:
        whole_match_java(regex.strip())
    except ValueError as exc:
        raise ConfigRejected(
            Problem.INVALID, f"topics.regex: {regex!r} is not a valid regular expression: {exc}"
        ) from None


def check_free(name: str, state: ConfigState) -> None:
    if name in state.connectors:
        raise ConfigRejected(Problem.CONFLICT, f"name: connector {name!r} already exists")


def check_own_group(name: str, config: Mapping[str, str], state: ConfigState, cluster: str) -> None:
    """Refuses a config whose sink would consume in another connector's consumer group (one
    that ``consumer.override.group.id`` names, under the All policy, or its own default): its
    tasks would take that connector's partitions and commit over its offsets."""
    group = sink_group_id(cluster, name, config)
    for other in sorted(state.connectors):
        if other != name and sink_group_id(cluster, other, state.connectors[other]) == group:
            raise ConfigRejected(
                Problem.INVALID,
                f"{GROUP_OVERRIDE}: {group} is the consumer group of connector {other!r}; a "
                "connector consumes in a group of its own",
            )


def check_exists(name: str, state: ConfigState) -> None:
    if name not in state.connectors:
        raise ConfigRejected(Problem.NOT_FOUND, f"connector {name!r} not found")


def check_task(name: str, task: int, state: ConfigState) -> None:
    check_exists(name, state)
    count = len(state.tasks_of(name))
    if not 0 <= task < count:
        raise ConfigRejected(
            Problem.NOT_FOUND, f"task {task} of connector {name!r} not found: it has {count} tasks"
        )


MAX_CONFIG_RECORD_BYTES = 1_000_000
"""The largest connector config the configs topic takes, as one record: below the broker's and
the producer's default limits (1 MiB), so that a config too large is refused here, by name,
rather than by Kafka."""


def check_config_size(config: Mapping[str, str]) -> None:
    """Refuses a config too large to store before any of it is validated: checking a config
    of many megabytes key by key, in a plugin process too, is work no answer is worth."""
    size = sum(len(k.encode()) + len(v.encode()) for k, v in config.items())
    if size > MAX_CONFIG_RECORD_BYTES:
        raise ConfigRejected(
            Problem.INVALID,
            f"config: its keys and values take {size} bytes; a connector's config is at most "
            f"{MAX_CONFIG_RECORD_BYTES} bytes, what fits in one record of the configs topic",
        )


def check_size(record: configlog.Record) -> configlog.Record:
    """The record, if the configs topic can take it."""
    size = len(record[1] or b"")
    if size > MAX_CONFIG_RECORD_BYTES:
        raise ConfigRejected(
            Problem.INVALID,
            f"config: the connector's config takes {size} bytes; "
            f"at most {MAX_CONFIG_RECORD_BYTES} bytes fit in one record of the configs topic",
        )
    return record
