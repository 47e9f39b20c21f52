"""jdbc 1.0.0: a sink writing records into PostgreSQL tables through the Spark executor.

Exactly once: each batch's rows and the last offset it covers commit in one database
transaction (the executor keeps the offsets in a ``headrace_offsets`` table beside yours), so a
batch redelivered after any crash writes only what is not there yet.

``insert.mode=insert`` appends every record; ``upsert`` keeps one row per ``pk.fields`` key, the
record of the latest offset winning. ``table.name.format`` names each topic's table
(``${topic}`` is replaced by the topic's name, dots and dashes by underscores); a missing table
is made from the first batch's columns. The URL's host may not be a link-local or cloud metadata
address.

Self-contained: imported as ``headrace_jdbc`` with this folder first on ``sys.path``; it imports
nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from headrace.sdk import (
    TOPICS_CONFIG,
    ConfigType,
    ConfigValue,
    Importance,
    TableSinkConnector,
    TableSinkTask,
    ValidString,
    non_empty_string,
)
from headrace.sdk.network import safe_url

VERSION = "1.0.0"
URL = "connection.url"
USER = "connection.user"
PASSWORD = "connection.password"
TABLE = "table.name.format"
MODE = "insert.mode"
KEYS = "pk.fields"
TOPIC_PLACEHOLDER = "${topic}"


def _url(name: str, value: Any) -> None:
    non_empty_string(name, value)
    safe_url(name, value)


CONFIG = (
    TOPICS_CONFIG.define(
        URL,
        ConfigType.STRING,
        importance=Importance.HIGH,
        validator=_url,
        doc="The database: jdbc:postgresql://host[:port]/database.",
    )
    .define(USER, ConfigType.STRING, None, Importance.HIGH, doc="Who connects.")
    .define(PASSWORD, ConfigType.PASSWORD, None, Importance.HIGH, doc="Their password.")
    .define(
        TABLE,
        ConfigType.STRING,
        TOPIC_PLACEHOLDER,
        Importance.MEDIUM,
        doc="The table of each topic's records; ${topic} is the topic's name.",
    )
    .define(
        MODE,
        ConfigType.STRING,
        "insert",
        Importance.HIGH,
        validator=ValidString(("insert", "upsert")),
        doc="insert: every record a row; upsert: one row per key, the latest record winning.",
    )
    .define(KEYS, ConfigType.LIST, "", Importance.MEDIUM, doc="The columns of a row's key.")
)


def table_for(template: str, topic: str) -> str:
    """The table of a topic's records: its name in the template, as a SQL name may spell it."""
    return template.replace(TOPIC_PLACEHOLDER, re.sub(r"[^A-Za-z0-9_]", "_", topic))


class JdbcSinkConnector(TableSinkConnector):
    """Every task gets the same config; the consumer group spreads the partitions."""

    VERSION = VERSION
    CONFIG = CONFIG

    def task_class(self) -> type[JdbcSinkTask]:
        return JdbcSinkTask

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        results = super().validate(config)
        by_name = {r.name: r for r in results}
        mode, keys = by_name[MODE], by_name[KEYS]
        if str(mode.value).lower() == "upsert" and not keys.value and not keys.errors:
            keys.errors.append(f"Invalid value for configuration {KEYS}: upsert needs key columns")
        return results


class JdbcSinkTask(TableSinkTask):
    """Writes each partition's buffer into its topic's table in one transaction per batch."""

    VERSION = VERSION
    FORMAT = "jdbc"
    CONFIG = CONFIG

    def write_options(self, config: Mapping[str, Any]) -> dict[str, str]:
        self._table = str(config[TABLE])
        options = {"url": str(config[URL]), "mode": str(config[MODE]).lower()}
        if config[KEYS]:
            options["key.columns"] = ",".join(config[KEYS])
        if config[USER] is not None:
            options["user"] = str(config[USER])
        if config[PASSWORD] is not None:
            options["password"] = str(config[PASSWORD])
        return options

    def options_for(self, topic: str) -> dict[str, str]:
        return {**self.options, "table": table_for(self._table, topic)}
