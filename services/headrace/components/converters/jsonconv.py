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

Schemas keep their name, version, doc, parameters (a JSON object of strings) and default, with the
keys in the order Connect writes them, so the bytes match Connect's. Logical values travel as
Connect's JsonConverter writes them: a Date, Time or Timestamp as its integer, a Decimal as the
base64 of its unscaled bytes or, with ``decimal.format=NUMERIC``, as a JSON number such as
``12.34``. Reading takes either form of Decimal whatever the setting, as Connect does, and gives
each logical type's Python value (``headrace.sdk.data``).
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from decimal import Context, Decimal, Inexact, InvalidOperation
from typing import TYPE_CHECKING, Any, cast

import orjson

from headrace.components.converters.base import NULL, SchemaAndValue
from headrace.sdk.data import (
    DECIMAL_NAME,
    LOGICAL_NAMES,
    Schema,
    Struct,
    Type,
    decimal_scale,
    described,
    from_logical,
    to_logical,
)
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import ArrowRecords

if TYPE_CHECKING:
    import pyarrow as pa

_DIGITS_AS_ZEROS = bytes(48 if 48 <= c <= 57 else 32 for c in range(256))
"""Every ASCII digit as ``0``, every other byte as a space: after it, nineteen digits in a row,
where an integer outside int64's range can start, are nineteen zeros (a plain search, which is
about seven times faster than a regular expression)."""
_NINETEEN = b"0" * 19
_INTEGERS = bytes(48 if 48 <= c <= 57 else 46 if c in b".eE" else 32 for c in range(256))
"""Every ASCII digit as ``0``, the bytes of a fraction or an exponent as ``.``, every other
byte as a space: after it, a space and sixteen zeros are where an integer of sixteen digits or
more can start."""
_SIXTEEN = b" " + b"0" * 16
MAX_ARROW_DEPTH = 64
"""How deeply JSON objects may nest to be read into Arrow; deeper ones are decoded in Python."""

DECIMAL_FORMATS = ("BASE64", "NUMERIC")
"""Values of ``decimal.format``, read without regard to case as Connect reads them."""

_ENVELOPE_DECODER = json.JSONDecoder(parse_float=Decimal)
"""Reads an envelope's fractions as Decimal, so a decimal written as a number keeps its digits;
a float schema makes floats of them again."""

_RESCALE = Context(prec=sys.int_info.default_max_str_digits, traps=[Inexact, InvalidOperation])
"""Rescales a decimal read as a JSON number exactly or not at all, and refuses one of more digits
than Python reads into an int from JSON text, so that an exponent such as ``1E+999999999`` does
not make a number of a billion digits."""


class JsonConverter:
    """JSON with or without the schema envelope (``schemas.enable``, default true as in Connect).

    ``schema.content`` (KIP-1054), with the envelope on, is one Connect schema, as JSON, for
    every message read: messages are then the payload alone, and any envelope in them is data.
    Writing is not changed by it. ``replace.null.with.default`` (default true, as in Connect):
    a null of a field whose schema has a default is read and written as that default; false
    keeps the null."""

    KEYS = ("schemas.enable", "decimal.format", "schema.content", "replace.null.with.default")

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        config = config or {}
        self.schemas_enable = _true_or_false(config, "schemas.enable")
        self.numeric_decimals = _decimal_format(config) == "NUMERIC"
        self.replace_null = _true_or_false(config, "replace.null.with.default")
        self.is_key = is_key
        self.schema: Schema | None = None
        content = config.get("schema.content", "").strip()
        if content:
            try:
                self.schema = schema_from_json(json.loads(content))
            except (ValueError, DataError, KeyError, TypeError) as exc:
                raise ConfigException(
                    f"schema.content: not a Connect schema in JSON: {exc}"
                ) from None

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None and schema is None:
            return None
        if schema is None and isinstance(value, Struct):
            schema = value.schema
        numeric = self.numeric_decimals
        payload = to_json_value(schema, value, numeric, self.replace_null)
        document = (
            {"schema": schema_to_json(schema, numeric_decimals=numeric), "payload": payload}
            if self.schemas_enable
            else payload
        )
        text = (
            _dumps_with_decimals(document)
            if numeric
            else json.dumps(document, separators=(",", ":"), ensure_ascii=False)
        )
        try:
            return text.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 can hold it
            raise DataError(f"the value holds text that is not valid Unicode: {exc}") from exc

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

    def to_arrow_column(
        self, topic: str, data: Sequence[bytes | None]
    ) -> tuple[Schema | None, ArrowRecords] | None:
        """Plain JSON messages that are each one JSON object, read into Arrow by pyarrow's JSON
        reader in native code (``ArrowRecords``: their Python values are made only if read);
        None when any is not, or when Arrow would hold one otherwise than it came: a tombstone,
        a line break inside a message (the reader's lines would not be the messages), an
        integer that may be past 64 bits, or past 2**53 where fractions are too (the reader
        would round it into a float column), a number JSON does not have (``Infinity``), text
        or a name that is not UTF-8, or nesting past ``MAX_ARROW_DEPTH``. Then
        ``to_connect_column`` decodes them."""
        if self.schemas_enable or None in data:
            return None
        messages = cast("Sequence[bytes]", data)  # no None in it
        joined = b"\n".join(messages)
        if b"\r" in joined or joined.count(b"\n") != len(messages) - 1:
            return None  # a line break in a message: lines would not be messages
        numbers = joined.translate(_INTEGERS)
        if _SIXTEEN + b"000" in numbers:
            return None  # an integer that may be past 64 bits
        table = json_objects(joined, len(messages))
        if table is None:
            return None
        if _has_floats(table.schema) and (_SIXTEEN in numbers or not _finite(table)):
            # An integer past 2**53 may share a column with fractions, which would round it;
            # or a fraction JSON does not have (Infinity, -NaN), which the reader takes.
            return None

        def decode() -> list[Any]:
            column = self.to_connect_column(topic, messages)
            if column is not None:
                return column[1]
            return [self.to_connect_data(topic, m).value for m in messages]  # NaN: json reads it

        return None, ArrowRecords(table, decode, len(joined))

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        try:
            enveloped = self.schemas_enable
            document = _envelope(bytes(data)) if enveloped else json.loads(bytes(data))
        except ValueError as exc:  # bad UTF-8 or JSON, or an integer of too many digits
            raise DataError(f"not valid JSON: {exc}") from exc
        if not self.schemas_enable:
            return SchemaAndValue(None, document)
        if self.schema is not None:  # the message is the payload: schema.content says its schema
            return SchemaAndValue(
                self.schema, from_json_value(self.schema, document, self.replace_null)
            )
        if not isinstance(document, dict) or set(document) != {"schema", "payload"}:
            raise DataError(
                'JsonConverter with schemas.enable requires "schema" and "payload" fields and '
                "may not contain additional fields. If you are trying to deserialize plain JSON "
                "data, set schemas.enable=false in your converter configuration."
            )
        if document["schema"] is None:
            return SchemaAndValue(None, _floats(document["payload"]))
        schema = schema_from_json(document["schema"])
        return SchemaAndValue(
            schema, from_json_value(schema, document["payload"], self.replace_null)
        )


def json_objects(lines: bytes, count: int) -> pa.Table | None:
    """``count`` JSON objects, one a line, as one table: a row per object, a column per field,
    as ``pyarrow.Table.from_pylist`` makes of them decoded (strings stay strings, where the
    reader would take some for timestamps). None when the lines are not ``count`` JSON objects
    (a line that is not one, a message holding a newline or two objects, a key twice in one
    object) or a column's values do not share a type: then they are decoded one by one, and a
    bad one is named."""
    import pyarrow as pa
    import pyarrow.json as pj

    options = pj.ReadOptions(use_threads=False, block_size=max(len(lines), 1 << 20))
    try:
        table = pj.read_json(pa.BufferReader(lines), read_options=options)
        if table.num_rows != count:
            return None
        schema = _without_timestamps(table.schema)
        if schema is None:
            return None
        if schema != table.schema:  # read once more, taking as text what looked like time
            parse = pj.ParseOptions(explicit_schema=schema)
            table = pj.read_json(pa.BufferReader(lines), read_options=options, parse_options=parse)
        table.validate(full=True)  # the reader leaves text that is not UTF-8 as it came
    except (pa.ArrowInvalid, UnicodeDecodeError):  # names too: a field's is read as it is made
        return None
    return table


def _fields(schema: pa.Schema) -> Iterator[pa.Field]:
    """Every field of the schema, nested ones too, without recursion."""
    import pyarrow as pa

    pending = list(schema)
    while pending:
        field = pending.pop()
        yield field
        kind = field.type
        if pa.types.is_struct(kind):
            pending.extend(kind.field(i) for i in range(kind.num_fields))
        elif pa.types.is_list(kind):
            pending.append(kind.value_field)


def _has_floats(schema: pa.Schema) -> bool:
    import pyarrow as pa

    return any(pa.types.is_float64(field.type) for field in _fields(schema))


def _finite(table: pa.Table) -> bool:
    """Whether every number of the table's fraction columns, nested ones too, is finite."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pending: list[pa.Array] = [chunk for column in table.columns for chunk in column.chunks]
    while pending:
        array = pending.pop()
        kind = array.type
        if pa.types.is_struct(kind):
            pending.extend(array.flatten())
        elif pa.types.is_list(kind):
            pending.append(array.flatten())
        elif pa.types.is_float64(kind) and pc.all(pc.is_finite(array)).as_py() is False:
            return False
    return True


def _without_timestamps(schema: pa.Schema) -> pa.Schema | None:
    """The schema pyarrow's JSON reader inferred, with text for its timestamps; None when it
    holds a type other than those ``Table.from_pylist`` makes of decoded JSON."""
    import pyarrow as pa

    fields = [_plain(field, 1) for field in schema]
    if any(field is None for field in fields):
        return None
    return pa.schema(cast("list[pa.Field]", fields))


def _plain(field: pa.Field, depth: int) -> pa.Field | None:
    import pyarrow as pa

    kind = field.type
    _ = field.name  # a name that is not UTF-8 raises UnicodeDecodeError here, as pyarrow reads it
    if depth > MAX_ARROW_DEPTH:
        return None
    if pa.types.is_timestamp(kind):
        return field.with_type(pa.string())
    if pa.types.is_struct(kind):
        children = [_plain(kind.field(i), depth + 1) for i in range(kind.num_fields)]
        if any(child is None for child in children):
            return None
        return field.with_type(pa.struct(cast("list[pa.Field]", children)))
    if pa.types.is_list(kind):
        item = _plain(kind.value_field, depth + 1)
        return None if item is None else field.with_type(pa.list_(item))
    plain = (pa.types.is_null, pa.types.is_boolean, pa.types.is_int64, pa.types.is_float64)
    if any(check(kind) for check in plain) or pa.types.is_string(kind):
        return field
    return None


def schema_to_json(schema: Schema | None, numeric_decimals: bool = False) -> dict[str, Any] | None:
    """Connect's JSON form of a schema, its keys in the order Connect's JsonConverter writes them.
    ``numeric_decimals`` writes a Decimal default as a number (``decimal.format=NUMERIC``)."""
    if schema is None:
        return None
    out: dict[str, Any] = {"type": schema.type.value}
    if schema.type is Type.STRUCT:
        out["fields"] = [
            {**_required(schema_to_json(f.schema, numeric_decimals)), "field": f.name}
            for f in schema.fields
        ]
    elif schema.type is Type.ARRAY:
        out["items"] = schema_to_json(schema.value_schema, numeric_decimals)
    elif schema.type is Type.MAP:
        out["keys"] = schema_to_json(schema.key_schema, numeric_decimals)
        out["values"] = schema_to_json(schema.value_schema, numeric_decimals)
    out["optional"] = schema.optional
    for attr in ("name", "version", "doc"):
        if getattr(schema, attr) is not None:
            out[attr] = getattr(schema, attr)
    if schema.parameters:
        out["parameters"] = dict(schema.parameters)
    if schema.default is not None:
        out["default"] = to_json_value(schema, schema.default, numeric_decimals=numeric_decimals)
    return out


def schema_from_json(node: Any) -> Schema:
    """Parses Connect's JSON form of a schema; DataError on anything else."""
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise DataError(f'schema must be an object with a string "type", not {described(node)}')
    try:
        type_ = Type(node["type"])
    except ValueError:
        raise DataError(f"unknown schema type {node['type']!r}") from None
    optional = node.get("optional") is True
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
    schema = replace(schema, **_schema_attributes(node))
    if node.get("default") is not None:
        schema = replace(schema, default=from_json_value(schema, node["default"]))
    return schema


def _schema_attributes(node: dict[str, Any]) -> dict[str, Any]:
    name, version, doc = node.get("name"), node.get("version"), node.get("doc")
    if not (name is None or isinstance(name, str)) or not (
        version is None or (isinstance(version, int) and not isinstance(version, bool))
    ):
        raise DataError(f"schema name must be text and version an integer: {described(node)}")
    if not (doc is None or isinstance(doc, str)):
        raise DataError(f"schema doc must be text: {described(node)}")
    parameters = node.get("parameters") or {}
    if not isinstance(parameters, dict) or not all(isinstance(v, str) for v in parameters.values()):
        raise DataError(f"schema parameters must be an object of strings: {described(node)}")
    return {"name": name, "version": version, "doc": doc, "parameters": tuple(parameters.items())}


def to_json_value(
    schema: Schema | None, value: Any, numeric_decimals: bool = False, defaults: bool = True
) -> Any:
    """A Connect value as JSON-ready Python data, following ``schema`` when there is one.
    A Decimal becomes base64 text, or with ``numeric_decimals`` stays a Decimal for the writer
    to set down as a JSON number. A null whose schema has a default is written as the default,
    unless ``defaults`` is False (``replace.null.with.default=false``)."""
    if value is None:
        if schema is not None:
            if schema.default is None or not defaults:
                if not defaults and schema.optional:
                    return None
                schema.validate_value(None)
                return None
            return to_json_value(schema, schema.default, numeric_decimals)
        return None
    if schema is None:
        return _schemaless_to_json(value, numeric_decimals)
    if schema.name in LOGICAL_NAMES:
        return _logical_to_json(schema, value, numeric_decimals)
    schema.validate_value(value)
    if schema.type is Type.BYTES:
        return base64.b64encode(bytes(value)).decode()
    if schema.type in (Type.FLOAT32, Type.FLOAT64):
        return float(value)
    if schema.type is Type.ARRAY:
        return [to_json_value(schema.value_schema, v, numeric_decimals, defaults) for v in value]
    if schema.type is Type.MAP:
        return _map_to_json(schema, value, numeric_decimals, defaults)
    if schema.type is Type.STRUCT:
        return {
            f.name: to_json_value(f.schema, value.get(f.name), numeric_decimals, defaults)
            for f in schema.fields
        }
    return value


def _map_to_json(
    schema: Schema, value: dict[Any, Any], numeric_decimals: bool, defaults: bool = True
) -> Any:
    keys, values = schema.key_schema, schema.value_schema
    assert keys is not None
    if keys.type is Type.STRING:
        return {k: to_json_value(values, v, numeric_decimals, defaults) for k, v in value.items()}
    return [
        [
            to_json_value(keys, k, numeric_decimals, defaults),
            to_json_value(values, v, numeric_decimals, defaults),
        ]
        for k, v in value.items()
    ]


def _logical_to_json(schema: Schema, value: Any, numeric_decimals: bool) -> Any:
    if numeric_decimals and schema.name == DECIMAL_NAME:
        schema.validate_value(value)
        return value
    raw = from_logical(schema, value)
    return base64.b64encode(raw).decode() if isinstance(raw, bytes) else raw


def from_json_value(schema: Schema, node: Any, defaults: bool = True) -> Any:
    """JSON data as a Connect value of ``schema``; DataError when it does not fit. A null whose
    schema has a default is read as the default, unless ``defaults`` is False."""
    if node is None:
        if schema.default is not None and defaults:
            return schema.default
        if not schema.optional:
            raise DataError(f"null value for a required {schema.type} field")
        return None
    if schema.name in LOGICAL_NAMES:
        return _logical_from_json(schema, node)
    t = schema.type
    if t is Type.BYTES:
        return _base64(node)
    if t in (Type.FLOAT32, Type.FLOAT64) and _is_number(node):
        node = float(node)
    if t is Type.ARRAY:
        if not isinstance(node, list):
            raise DataError(f"expected a JSON array, not {described(node)}")
        assert schema.value_schema is not None
        return [from_json_value(schema.value_schema, v, defaults) for v in node]
    if t is Type.MAP:
        return _map_from_json(schema, node, defaults)
    if t is Type.STRUCT:
        if not isinstance(node, dict):
            raise DataError(f"expected a JSON object for struct, not {described(node)}")
        return Struct(
            schema,
            {f.name: from_json_value(f.schema, node.get(f.name), defaults) for f in schema.fields},
        )
    schema.validate_value(node)
    return node


def _logical_from_json(schema: Schema, node: Any) -> Any:
    if schema.name == DECIMAL_NAME:
        if isinstance(node, str):
            return to_logical(schema, _base64(node))
        if _is_number(node):
            return _rescaled(Decimal(node), decimal_scale(schema))
        raise DataError(f"a decimal must be base64 text or a JSON number, not {described(node)}")
    if isinstance(node, bool) or not isinstance(node, int):
        raise DataError(f"{schema.name} values are JSON integers, not {described(node)}")
    return to_logical(schema, node)


def _rescaled(value: Decimal, scale: int) -> Decimal:
    """``value`` with exactly ``scale`` places: a JSON number may carry fewer (``1.5``, or ``2``,
    for a scale-2 decimal), though never more unless they are zeros."""
    try:
        return value.quantize(Decimal((0, (1,), -scale)), context=_RESCALE)
    except (Inexact, InvalidOperation):
        raise DataError(f"{value} is not a decimal of scale {scale}") from None


def _base64(node: Any) -> bytes:
    if not isinstance(node, str):
        raise DataError(f"bytes must be base64 text, not {described(node)}")
    try:
        return base64.b64decode(node, validate=True)
    except binascii.Error as exc:
        raise DataError(f"invalid base64 for a bytes field: {exc}") from exc


def _is_number(node: Any) -> bool:
    return isinstance(node, int | Decimal) and not isinstance(node, bool)


def _envelope(data: bytes) -> Any:
    """``json.loads(data)``, but fractions read by ``_ENVELOPE_DECODER``."""
    return _ENVELOPE_DECODER.decode(data.decode(json.detect_encoding(data), "surrogatepass"))


def _floats(node: Any) -> Any:
    """Schemaless JSON read from the envelope, with its fractions (read as Decimal) as floats."""
    if isinstance(node, Decimal):
        return float(node)
    if isinstance(node, list):
        return [_floats(v) for v in node]
    if isinstance(node, dict):
        return {k: _floats(v) for k, v in node.items()}
    return node


def _map_from_json(schema: Schema, node: Any, defaults: bool = True) -> dict[Any, Any]:
    assert schema.key_schema is not None and schema.value_schema is not None
    if isinstance(node, dict) and schema.key_schema.type is Type.STRING:
        pairs = list(node.items())
    elif isinstance(node, list) and all(isinstance(p, list) and len(p) == 2 for p in node):
        pairs = [(p[0], p[1]) for p in node]
    else:
        raise DataError(
            f"expected a JSON object or [[key, value], ...] for map, not {described(node)}"
        )
    return {
        from_json_value(schema.key_schema, k, defaults): from_json_value(
            schema.value_schema, v, defaults
        )
        for k, v in pairs
    }


def _schemaless_to_json(value: Any, numeric_decimals: bool = False) -> Any:
    if isinstance(value, Struct):
        return to_json_value(value.schema, value, numeric_decimals)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, list | tuple):
        return [_schemaless_to_json(v, numeric_decimals) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _schemaless_to_json(v, numeric_decimals) for k, v in value.items()}
        return [
            [_schemaless_to_json(k, numeric_decimals), _schemaless_to_json(v, numeric_decimals)]
            for k, v in value.items()
        ]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise DataError(f"cannot convert {type(value).__name__} to JSON without a schema")


def _true_or_false(config: Mapping[str, str], key: str) -> bool:
    raw = config.get(key, "true").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigException(f"{key} must be true or false, not {raw!r}")
    return raw == "true"


def _decimal_format(config: Mapping[str, str]) -> str:
    raw = config.get("decimal.format", "BASE64")
    value = raw.strip().upper()
    if value not in DECIMAL_FORMATS:
        raise ConfigException(
            f"decimal.format must be one of {', '.join(DECIMAL_FORMATS)}, not {raw!r}"
        )
    return value


def _dumps_with_decimals(node: Any) -> str:
    """``json.dumps``' compact text, with each Decimal set down as the JSON number it is. Python's
    ``str`` of a Decimal is Java's ``BigDecimal.toString`` (``12.34``, ``0E-10``, ``1E+3``), which
    is what Connect's JsonConverter writes for ``decimal.format=NUMERIC``."""
    if isinstance(node, Decimal):
        return str(node)
    if isinstance(node, dict):
        items = (f"{_dumps_with_decimals(k)}:{_dumps_with_decimals(v)}" for k, v in node.items())
        return "{" + ",".join(items) + "}"
    if isinstance(node, list):
        return "[" + ",".join(_dumps_with_decimals(v) for v in node) + "]"
    return json.dumps(node, ensure_ascii=False)


def _field_name(node: Any) -> str:
    if not isinstance(node, dict) or not isinstance(node.get("field"), str):
        raise DataError(f'struct field needs a string "field" name: {described(node)}')
    return node["field"]


def _required(node: dict[str, Any] | None) -> dict[str, Any]:
    assert node is not None
    return node
