"""The protocol of the configs topic (``<cluster>-configs``): one partition, compacted.

| key | value | meaning |
| --- | --- | --- |
| ``connector-<name>`` | ``ConnectorConfigured`` | the connector's whole config (create or update) |
| ``connector-<name>`` | tombstone | the connector is deleted |
| ``task-<name>-<n>`` | ``TaskConfigured`` | task n's config, staged until the next commit |
| ``task-<name>-<n>`` | tombstone | clean-up after a deletion, so compaction can drop the key |
| ``commit-<name>`` | ``TasksCommitted`` | tasks 0..count-1 of the connector are now live |
| ``commit-<name>`` | tombstone | clean-up after a deletion |
| ``target-state-<name>`` | ``TargetStateChanged`` | RUNNING, PAUSED or STOPPED; none: RUNNING |
| ``target-state-<name>`` | tombstone | clean-up after a deletion |
| ``restart-<name>`` | ``RestartRequested`` | restart these units; the offset orders restarts |
| ``restart-<name>`` | tombstone | clean-up after a deletion |
| ``auto-restart-<name>`` | ``AutoRestarts`` | the units' last automatic restarts, as a whole |
| ``auto-restart-<name>`` | tombstone | clean-up after a deletion |
| ``session-key`` | ``SessionKeyCreated`` | the key internal calls are signed with |
| ``logger-cluster-<logger>`` | ``LoggerLevelSet`` | a log level for every process (KIP-976) |
| ``plugin-<group:artifact:version>`` | ``PluginInstalled`` | a Java plugin for every service |
| ``plugin-<group:artifact:version>`` | tombstone | the plugin is uninstalled |
| ``topics-reset-<name>`` | ``TopicsReset`` | its tasks report the topics they use again (KIP-558) |
| ``topics-reset-<name>`` | tombstone | clean-up after a deletion |
| ``request-<id>`` | ``RequestApplied`` | the command topic's command of that id is applied |
| ``request-<id>`` | tombstone | its answer is kept by the automation agent: forgotten here |

Only the config service writes this topic, each write a transaction under the transactional id
``<cluster>-configs-writer``: its replicas take turns, and a write decided on a state another
replica changed meanwhile is aborted (see ``headrace.config.store``).

Compaction keeps the latest record per key, so a commit may outlive task records that a later,
smaller task set tombstoned; the fold ignores a commit whose task records are not all there.
Connector names may contain ``-``: a task key is split at its last ``-``.
"""

from __future__ import annotations

from collections.abc import Mapping

from headrace.core.model.autorestart import Attempt
from headrace.core.model.configstate import (
    AppliedRequest,
    AutoRestartsRecorded,
    ConfigEvent,
    ConnectorConfigured,
    ConnectorRemoved,
    EncodedConfig,
    InstalledPlugin,
    LoggerLevelSet,
    LogLevel,
    PluginInstalled,
    PluginUninstalled,
    RequestApplied,
    RequestForgotten,
    RestartRequested,
    SessionKey,
    SessionKeyCreated,
    TargetStateChanged,
    TaskConfigured,
    TasksCommitted,
    TaskSetOrigin,
    TopicsReset,
)
from headrace.core.model.structs import Target
from headrace.v1 import events_pb2

Record = tuple[str, bytes | None]


SESSION_KEY = "session-key"


def connector_key(name: str) -> str:
    return f"connector-{name}"


def task_key(name: str, task: int) -> str:
    return f"task-{name}-{task}"


def commit_key(name: str) -> str:
    return f"commit-{name}"


def target_key(name: str) -> str:
    return f"target-state-{name}"


def restart_key(name: str) -> str:
    return f"restart-{name}"


def auto_restart_key(name: str) -> str:
    return f"auto-restart-{name}"


LOGGER_PREFIX = "logger-cluster-"
TOPICS_RESET_PREFIX = "topics-reset-"
PLUGIN_PREFIX = "plugin-"


def logger_key(logger: str) -> str:
    return f"{LOGGER_PREFIX}{logger}"


def topics_reset_key(name: str) -> str:
    return f"{TOPICS_RESET_PREFIX}{name}"


def request_key(request_id: str) -> str:
    return f"request-{request_id}"


def decode(key: str, value: bytes | None, offset: int = 0) -> ConfigEvent | None:
    """The event a record of the configs topic carries (``offset`` is where it was); None for
    records it does not know."""
    if key.startswith("connector-"):
        name = key.removeprefix("connector-")
        if value is None:
            return ConnectorRemoved(name)
        msg = events_pb2.ConnectorConfigured.FromString(value)
        config = EncodedConfig(events_pb2.ConnectorConfigured.FromString, value)
        return ConnectorConfigured(name, config, msg.incarnation, offset)
    if key.startswith("task-") and value is not None:
        msg_t = events_pb2.TaskConfigured.FromString(value)
        config = EncodedConfig(events_pb2.TaskConfigured.FromString, value)
        return TaskConfigured(msg_t.connector, msg_t.task, config)
    if key.startswith("commit-") and value is not None:
        msg_c = events_pb2.TasksCommitted.FromString(value)
        made_from = None
        if msg_c.config_version or msg_c.signed_at_ms:
            made_from = TaskSetOrigin(msg_c.config_version, msg_c.signed_at_ms)
        return TasksCommitted(msg_c.connector, msg_c.task_count, made_from)
    if key.startswith("target-state-") and value is not None:
        msg_s = events_pb2.TargetStateChanged.FromString(value)
        if msg_s.state not in Target.__members__:
            return None  # a state this version does not know: the connector keeps its own
        return TargetStateChanged(msg_s.connector, Target(msg_s.state))
    if key.startswith("restart-") and value is not None:
        msg_r = events_pb2.RestartRequested.FromString(value)
        return RestartRequested(msg_r.connector, tuple(msg_r.tasks), offset)
    if key.startswith("auto-restart-") and value is not None:
        msg_a = events_pb2.AutoRestarts.FromString(value)
        attempts = {u.task: Attempt(u.attempt, u.at_ms) for u in msg_a.units}
        return AutoRestartsRecorded(msg_a.connector, attempts)
    if key.startswith("request-"):
        request_id = key.removeprefix("request-")
        if value is None:
            return RequestForgotten(request_id)
        msg_q = events_pb2.RequestApplied.FromString(value)
        applied = AppliedRequest(msg_q.method, msg_q.connector, msg_q.created, msg_q.applied_at_ms)
        return RequestApplied(request_id, applied)
    if key.startswith(TOPICS_RESET_PREFIX) and value is not None:
        msg_t = events_pb2.TopicsReset.FromString(value)
        return TopicsReset(msg_t.connector, msg_t.at_ms)
    if key.startswith(LOGGER_PREFIX) and value is not None:
        msg_l = events_pb2.LoggerLevelSet.FromString(value)
        return LoggerLevelSet(msg_l.logger, LogLevel(msg_l.level, msg_l.at_ms))
    if key.startswith(PLUGIN_PREFIX):
        coordinate = key.removeprefix(PLUGIN_PREFIX)
        if value is None:
            return PluginUninstalled(coordinate)
        msg_p = events_pb2.PluginInstalled.FromString(value)
        return PluginInstalled(coordinate, InstalledPlugin(msg_p.sha512, msg_p.at_ms))
    if key == SESSION_KEY and value is not None:
        msg_k = events_pb2.SessionKeyCreated.FromString(value)
        return SessionKeyCreated(SessionKey(msg_k.key, msg_k.created_ms))
    return None  # the other tombstones only let compaction clean up


def connector_configured(name: str, config: Mapping[str, str], incarnation: str) -> Record:
    msg = events_pb2.ConnectorConfigured(name=name, config=dict(config), incarnation=incarnation)
    return connector_key(name), msg.SerializeToString()


def auto_restarts(name: str, attempts: Mapping[int, Attempt]) -> Record:
    units = [
        events_pb2.AutoRestart(task=task, attempt=a.count, at_ms=a.at_ms)
        for task, a in sorted(attempts.items())
    ]
    msg = events_pb2.AutoRestarts(connector=name, units=units)
    return auto_restart_key(name), msg.SerializeToString()


def request_applied(request_id: str, applied: AppliedRequest) -> Record:
    msg = events_pb2.RequestApplied(
        method=applied.method,
        connector=applied.connector,
        created=applied.created,
        applied_at_ms=applied.applied_at_ms,
    )
    return request_key(request_id), msg.SerializeToString()


def request_forgotten(request_id: str) -> Record:
    return request_key(request_id), None


def logger_level(logger: str, level: str, at_ms: int) -> Record:
    """A log level set for every process of the cluster (KIP-976)."""
    msg = events_pb2.LoggerLevelSet(logger=logger, level=level, at_ms=at_ms)
    return logger_key(logger), msg.SerializeToString()


def plugin_installed(coordinate: str, plugin: InstalledPlugin) -> Record:
    """A Java plugin installed for the whole cluster."""
    msg = events_pb2.PluginInstalled(
        coordinate=coordinate, sha512=plugin.sha512, at_ms=plugin.at_ms
    )
    return f"{PLUGIN_PREFIX}{coordinate}", msg.SerializeToString()


def plugin_uninstalled(coordinate: str) -> Record:
    return f"{PLUGIN_PREFIX}{coordinate}", None


def topics_reset(name: str, at_ms: int) -> Record:
    """The connector's topics reset: its running tasks report them again (KIP-558)."""
    msg = events_pb2.TopicsReset(connector=name, at_ms=at_ms)
    return topics_reset_key(name), msg.SerializeToString()


def session_key(key: SessionKey) -> Record:
    msg = events_pb2.SessionKeyCreated(key=key.key, created_ms=key.created_ms)
    return SESSION_KEY, msg.SerializeToString()


def task_set(
    name: str, tasks: list[Mapping[str, str]], made_from: TaskSetOrigin | None = None
) -> list[Record]:
    """The records that make ``tasks`` the connector's live task set: each task, then the commit
    (saying what the set was made from, when known)."""
    records: list[Record] = [
        (
            task_key(name, i),
            events_pb2.TaskConfigured(connector=name, task=i, config=dict(cfg)).SerializeToString(),
        )
        for i, cfg in enumerate(tasks)
    ]
    commit = events_pb2.TasksCommitted(connector=name, task_count=len(tasks))
    if made_from is not None:
        commit.config_version = made_from.config_version
        commit.signed_at_ms = made_from.signed_at_ms
    records.append((commit_key(name), commit.SerializeToString()))
    return records


def target_state(name: str, target: Target) -> Record:
    msg = events_pb2.TargetStateChanged(connector=name, state=target.value)
    return target_key(name), msg.SerializeToString()


def restart(name: str, tasks: list[int]) -> Record:
    msg = events_pb2.RestartRequested(connector=name, tasks=tasks)
    return restart_key(name), msg.SerializeToString()


def deletion(name: str, task_count: int) -> list[Record]:
    """The records that delete a connector: the tombstone that counts, then clean-up tombstones."""
    records: list[Record] = [
        (connector_key(name), None),
        (commit_key(name), None),
        (target_key(name), None),
        (restart_key(name), None),
        (auto_restart_key(name), None),
        (topics_reset_key(name), None),
    ]
    records.extend((task_key(name, i), None) for i in range(task_count))
    return records
