"""Kafka Connect's single message transforms and predicates, over headrace's records.

A connector's ``transforms`` and ``predicates`` keys describe a chain (``parse_chain``); the
runtime applies it to each record a source task produces, before the converters, and to each
record a sink task is given, after them. Every transformation and predicate here is a pure
function of the record once configured, with Connect's class names, keys and defaults:

| module | what |
| --- | --- |
| ``base`` | what they share: ``Side`` ($Key/$Value), the record plumbing |
| ``chain`` | ``parse_chain``, ``TransformChain``, ``transform_keys`` |
| ``registry`` | class names and aliases to implementations |
| ``fields`` | InsertField, ReplaceField, MaskField, ValueToKey |
| ``shape`` | ExtractField, HoistField, Flatten |
| ``metadata`` | SetSchemaMetadata |
| ``cast`` | Cast |
| ``timestamps`` | TimestampConverter, TimestampRouter |
| ``routing`` | RegexRouter, Filter |
| ``headers`` | DropHeaders, InsertHeader, HeaderFrom |
| ``predicates`` | TopicNameMatches, HasHeaderKey, RecordIsTombstone |
| ``configs`` | reading keys, problems named by key (``InvalidConfig``) |
| ``headrace.components.java`` | Java's regexes, date patterns and number formats, on Python |

Schemaless keys and values are ``dict`` (Connect's Map), as the JSON converter with
``schemas.enable=false`` gives them; with a schema a STRUCT is a ``headrace.sdk.data.Struct``.
A record a transformation cannot handle raises DataError; the chain adds the alias to the
message, and the runtime counts it as a record error (``errors.tolerance``).
"""

from headrace.components.transforms.base import Side
from headrace.components.transforms.cast import Cast
from headrace.components.transforms.chain import (
    Stage,
    TransformChain,
    parse_chain,
    transform_keys,
    unclaimed_keys,
)
from headrace.components.transforms.configs import InvalidConfig
from headrace.components.transforms.fields import InsertField, MaskField, ReplaceField, ValueToKey
from headrace.components.transforms.headers import DropHeaders, HeaderFrom, InsertHeader
from headrace.components.transforms.metadata import SetSchemaMetadata
from headrace.components.transforms.predicates import (
    HasHeaderKey,
    RecordIsTombstone,
    TopicNameMatches,
)
from headrace.components.transforms.registry import (
    PREDICATES,
    TRANSFORMS,
    new_predicate,
    new_transform,
)
from headrace.components.transforms.routing import Filter, RegexRouter
from headrace.components.transforms.shape import ExtractField, Flatten, HoistField
from headrace.components.transforms.timestamps import TimestampConverter, TimestampRouter
from headrace.sdk.components import Predicate, Record, Transformation

__all__ = [
    "PREDICATES",
    "TRANSFORMS",
    "Cast",
    "DropHeaders",
    "ExtractField",
    "Filter",
    "Flatten",
    "HasHeaderKey",
    "HeaderFrom",
    "HoistField",
    "InsertField",
    "InsertHeader",
    "InvalidConfig",
    "MaskField",
    "Predicate",
    "Record",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceField",
    "SetSchemaMetadata",
    "Side",
    "Stage",
    "TimestampConverter",
    "TimestampRouter",
    "TopicNameMatches",
    "TransformChain",
    "Transformation",
    "ValueToKey",
    "new_predicate",
    "new_transform",
    "parse_chain",
    "transform_keys",
    "unclaimed_keys",
]
