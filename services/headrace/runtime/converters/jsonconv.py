"""The JSON converter, compatible with Connect's ``org.apache.kafka.connect.json.JsonConverter``.

With ``schemas.enable=true`` every message is Connect's envelope::

    {"schema": {"type": "struct", "optional": false, "fields": [
        {"field": "id", "type": "int64", "optional": false}]},
     "payload": {"id": 1}}

and reading requires exactly that shape; as in Connect, that is this converter's default. With
``schemas.enable=false`` (what headrace uses when a connector names no converter) messages are plain
JSON and values come back as dicts, lists and scalars with
no schema. Bytes travel as base64 text; maps with non-string keys as ``[[key, value], ...]``,
as Connect writes them. A null value is a null message (a tombstone) in both modes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from headrace.runtime.converters.base import NULL, SchemaAndValue
from headrace.sdk.data import Schema, Struct, Type
from headrace.sdk.errors import ConfigException, DataError

_DIGITS_AS_ZEROS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
"""Every ASCII digit as ``0``, every other byte as a space: after it, nineteen digits in a row,
where an integer outside int64's range can start, are nineteen zeros (a plain search, which is
about seven times faster than a regular expression)."""
_NINETEEN = b"0" * 19


class JsonConverter:
    """JSON with or without the schema envelope (``schemas.enable``, default true as in Connect)."""

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        raw = (config or {}).get("schemas.enable", "true").strip().lower()
        if raw not in ("true", "false"):
            raise ConfigException(f"schemas.enable must be true or false, not {raw!r}")
        self.schemas_enable = raw == "true"
        self.is_key = is_key

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None and schema is None:
            return None
        if schema is None and isinstance(value, Struct):
            schema = value.schema
        payload = to_json_value(schema, value)
        document = (
            {"schema": schema_to_json(schema), "payload": payload}
            if self.schemas_enable
            else payload
        )
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()

    def to_connect_column(
        self, topic: str, data: Sequence[bytes | None]
    ) -> tuple[Schema | None, list[Any]] | None:
        """Plain JSON messages (``schemas.enable=false``) decoded by orjson, in native code: the
        values ``to_connect_data`` gives, as a list. None with the envelope, when orjson refuses
        a message (NaN, bad JSON), or when a message may hold an integer beyond 64 bits (which
        orjson would make a float): then each message is decoded, and a bad one named, on its
        own."""
        if self.schemas_enable:
            return None
        joined = b" ".join(d for d in data if d is not None)
        if _NINETEEN in joined.translate(_DIGITS_AS_ZEROS):
            return None  # maybe such an integer; a long number in a string is merely slower
        loads = orjson.loads
        try:
            return None, [None if d is None else loads(d) for d in data]
        except orjson.JSONDecodeError:
            return None

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        try:
            document = json.loads(bytes(data))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"not valid JSON: {exc}") from exc
        if not self.schemas_enable:
            return SchemaAndValue(None, document)
        if not isinstance(document, dict) or set(document) != {"schema", "payload"}:
            raise DataError(
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and '
                "may not contain additional fields. If you are trying to deserialize plain JSON "
                "data, set schemas.enable=false in your converter configuration."
            )
        if document["schema"] is None:
            return SchemaAndValue(None, document["payload"])
        schema = schema_from_json(document["schema"])
        return SchemaAndValue(schema, from_json_value(schema, document["payload"]))


def schema_to_json(schema: Schema | None) -> dict[str, Any] | None:
    """Connect's JSON form of a schema."""
    if schema is None:
        return None
    out: dict[str, Any] = {"type": schema.type.value, "optional": schema.optional}
    if schema.type is Type.STRUCT:
        out["fields"] = [
            {**_required(schema_to_json(f.schema)), "field": f.name} for f in schema.fields
        ]
    elif schema.type is Type.ARRAY:
        out["items"] = schema_to_json(schema.value_schema)
    elif schema.type is Type.MAP:
        out["keys"] = schema_to_json(schema.key_schema)
        out["values"] = schema_to_json(schema.value_schema)
    for attr in ("name", "version", "doc"):
        if getattr(schema, attr) is not None:
            out[attr] = getattr(schema, attr)
    if schema.default is not None:
        out["default"] = to_json_value(schema, schema.default)
    return out


def schema_from_json(node: Any) -> Schema:
    """Parses Connect's JSON form of a schema; DataError on anything else."""
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise DataError(f'schema must be an object with a string "type", not {node!r}')
    try:
        type_ = Type(node["type"])
    except ValueError:
        raise DataError(f"unknown schema type {node['type']!r}") from None
    optional = bool(node.get("optional", False))
    if type_ is Type.STRUCT:
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise DataError('struct schema needs a "fields" array')
        schema = Schema.struct(
            [(_field_name(f), schema_from_json(f)) for f in fields],
            name=node.get("name"),
            optional=optional,
        )
    elif type_ is Type.ARRAY:
        schema = Schema.array(schema_from_json(node.get("items")), optional=optional)
    elif type_ is Type.MAP:
        schema = Schema.map(
            schema_from_json(node.get("keys")), schema_from_json(node.get("values")), optional
        )
    else:
        schema = Schema(type_, optional=optional)
    name, version, doc = node.get("name"), node.get("version"), node.get("doc")
    if not (name is None or isinstance(name, str)) or not (
        version is None or (isinstance(version, int) and not isinstance(version, bool))
    ):
        raise DataError(f"schema name must be text and version an integer: {node!r}")
    schema = replace(schema, name=name, version=version, doc=doc)
    if node.get("default") is not None:
        schema = replace(schema, default=from_json_value(schema, node["default"]))
    return schema


def to_json_value(schema: Schema | None, value: Any) -> Any:
    """A Connect value as JSON-ready Python data, following ``schema`` when there is one."""
    if value is None:
        if schema is not None:
            schema.validate_value(None)
            return to_json_value(schema, schema.default) if schema.default is not None else None
        return None
    if schema is None:
        return _schemaless_to_json(value)
    schema.validate_value(value)
    if schema.type is Type.BYTES:
        return base64.b64encode(bytes(value)).decode()
    if schema.type in (Type.FLOAT32, Type.FLOAT64):
        return float(value)
    if schema.type is Type.ARRAY:
        return [to_json_value(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        assert schema.key_schema is not None
        if schema.key_schema.type is Type.STRING:
            return {k: to_json_value(schema.value_schema, v) for k, v in value.items()}
        return [
            [to_json_value(schema.key_schema, k), to_json_value(schema.value_schema, v)]
            for k, v in value.items()
        ]
    if schema.type is Type.STRUCT:
        return {f.name: to_json_value(f.schema, value.get(f.name)) for f in schema.fields}
    return value


def from_json_value(schema: Schema, node: Any) -> Any:
    """JSON data as a Connect value of ``schema``; DataError when it does not fit."""
    if node is None:
        if schema.default is not None:
            return schema.default
        if not schema.optional:
            raise DataError(f"null value for a required {schema.type} field")
        return None
    t = schema.type
    if t is Type.BYTES:
        if not isinstance(node, str):
            raise DataError(f"bytes must be base64 text, not {node!r}")
        try:
            return base64.b64decode(node, validate=True)
        except binascii.Error as exc:
            raise DataError(f"invalid base64 for a bytes field: {exc}") from exc
    if t in (Type.FLOAT32, Type.FLOAT64) and isinstance(node, int) and not isinstance(node, bool):
        node = float(node)
    if t is Type.ARRAY:
        if not isinstance(node, list):
            raise DataError(f"expected a JSON array, not {node!r}")
        assert schema.value_schema is not None
        return [from_json_value(schema.value_schema, v) for v in node]
    if t is Type.MAP:
        return _map_from_json(schema, node)
    if t is Type.STRUCT:
        if not isinstance(node, dict):
            raise DataError(f"expected a JSON object for struct, not {node!r}")
        return Struct(
            schema, {f.name: from_json_value(f.schema, node.get(f.name)) for f in schema.fields}
        )
    schema.validate_value(node)
    return node


def _map_from_json(schema: Schema, node: Any) -> dict[Any, Any]:
    assert schema.key_schema is not None and schema.value_schema is not None
    if isinstance(node, dict) and schema.key_schema.type is Type.STRING:
        pairs = list(node.items())
    elif isinstance(node, list) and all(isinstance(p, list) and len(p) == 2 for p in node):
        pairs = [(p[0], p[1]) for p in node]
    else:
        raise DataError(f"expected a JSON object or [[key, value], ...] for map, not {node!r}")
    return {
        from_json_value(schema.key_schema, k): from_json_value(schema.value_schema, v)
        for k, v in pairs
    }


def _schemaless_to_json(value: Any) -> Any:
    if isinstance(value, Struct):
        return to_json_value(value.schema, value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, list | tuple):
        return [_schemaless_to_json(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _schemaless_to_json(v) for k, v in value.items()}
        return [[_schemaless_to_json(k), _schemaless_to_json(v)] for k, v in value.items()]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise DataError(f"cannot convert {type(value).__name__} to JSON without a schema")


def _field_name(node: Any) -> str:
    if not isinstance(node, dict) or not isinstance(node.get("field"), str):
        raise DataError(f'struct field needs a string "field" name: {node!r}')
    return node["field"]


def _required(node: dict[str, Any] | None) -> dict[str, Any]:
    assert node is not None
    return node
