"""Which keys of a connector config are secret besides its connector's own: its components'.

A connector config carries the keys of the components it names under their prefixes
(``key.converter.*``, ``value.converter.*``, ``header.converter.*``, ``transforms.<alias>.*``,
``predicates.<alias>.*``), and a component's ``config_def()`` may type some PASSWORD, as a
connector's may: ``transforms.mask.secret`` is secret when the transformation ``mask`` names
defines a PASSWORD key ``secret``. They are hidden wherever the connector's are (answers, traces,
logs; ``headrace.core.security.secrets``).

``secret_keys`` is pure: given what each component's definition says (``PasswordKeys``), it
prefixes them. A component whose definition cannot be had (an unknown name, a plugin that
cannot be loaded, a converter without ``config_def``) has every key of its own taken as secret,
as are keys under ``transforms.`` or ``predicates.`` that belong to no listed alias: hiding a
value too many is the safe side. The keys the framework reads to choose what runs (``type``,
``predicate``, ``negate``, the version) are never secret.

Kafka clients: they type some of their keys PASSWORD (``sasl.jaas.config``, the TLS stores'
passwords and inline keys), and a connector config carries them under many prefixes: client
overrides (``producer.override.``...), and the clients connectors embed and configure from
their own keys (Debezium's ``schema.history.internal.producer.``, MirrorMaker's
``source.cluster.``, ``target.cluster.``...). Such a key is secret whatever its prefix.

``definition`` reads a component's definition where its class can be loaded: in a plugin
process, the versions it loaded from the plugin path, else the built-ins (all the config service
has).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from headrace.components import extensions
from headrace.components.converters.base import sub_config
from headrace.components.transforms.chain import (
    IMPLICIT_KEYS,
    PREDICATES,
    TRANSFORMS,
    configured_aliases,
    own_keys,
    unclaimed_keys,
)
from headrace.components.transforms.registry import new_predicate, new_transform
from headrace.components.versions import BUILTINS, VERSION_SUFFIX, Named
from headrace.core.model.configinfo import ConfigInfos
from headrace.sdk.config import ConfigDef, Type

PasswordKeys = Callable[[Named], frozenset[str] | None]
"""A component's PASSWORD keys (without its prefix), as the definition of the version the
config selects says; None when that definition cannot be had."""

CLIENT_PASSWORD_KEYS = (
    "sasl.jaas.config",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
)
"""The Kafka clients' keys of type PASSWORD, as a client override may name them."""

_CONVERTERS = (
    ("key.converter", "converter"),
    ("value.converter", "converter"),
    ("header.converter", "header_converter"),
)


def secret_keys(config: Mapping[str, str], password_keys: PasswordKeys) -> frozenset[str]:
    """The keys of ``config`` that are secret as its components' definitions say (see the
    module docstring), with the client overrides' password keys."""
    found: set[str] = set()
    for use, prefix, own in _components(config):
        secret = password_keys(use) if use is not None else None
        found.update(prefix + k for k in own if secret is None or k in secret)
    found.update(unclaimed_keys(config))
    found.update(k for k in config if is_client_password(k))
    return frozenset(found)


def is_client_password(key: str) -> bool:
    """Whether ``key`` is a Kafka client's PASSWORD key under any prefix: a client override's
    (``producer.override.sasl.jaas.config``), an embedded client's (Debezium's
    ``schema.history.internal.producer.sasl.jaas.config``, MirrorMaker's
    ``source.cluster.ssl.keystore.password``), or a connector's own."""
    return any(key == k or key.endswith("." + k) for k in CLIENT_PASSWORD_KEYS)


def _components(config: Mapping[str, str]) -> Iterator[tuple[Named | None, str, set[str]]]:
    """Each component the config configures: what it names (None: no type is named), its
    prefix, and its own keys (without the prefix, without the framework's)."""
    for prefix, kind in _CONVERTERS:
        name = config.get(prefix, "").strip()
        # No name: the built-in default, which takes no secret.
        if name:
            use = Named(kind, prefix, name, prefix + VERSION_SUFFIX)
            yield use, prefix + ".", set(sub_config(config, prefix))
    for namespace, kind in ((TRANSFORMS, "transformation"), (PREDICATES, "predicate")):
        for alias in configured_aliases(config, namespace):
            base = f"{namespace}.{alias}"
            own = set(own_keys(config, namespace, alias)) - set(IMPLICIT_KEYS)
            name = config.get(base + ".type", "").strip()
            named = Named(kind, base + ".type", name, base + VERSION_SUFFIX) if name else None
            yield named, base + ".", own


def naming_keys(config: Mapping[str, str]) -> dict[str, str]:
    """The keys of ``config`` that name its components and their versions: all a definition
    of their keys depends on."""
    converters = {prefix for prefix, _ in _CONVERTERS}
    return {
        k: v
        for k, v in config.items()
        if k in (TRANSFORMS, PREDICATES)
        or k in converters
        or k.endswith(VERSION_SUFFIX)
        or (k.startswith((f"{TRANSFORMS}.", f"{PREDICATES}.")) and k.endswith(".type"))
    }


@dataclass(frozen=True)
class JavaKeys:
    """What a Java connector's JVM said of a config's keys: the PASSWORD keys of the connector
    and of its components (under their prefixes, as Connect's validation names them), and the
    keys naming a component it could not make."""

    connector: frozenset[str]
    components: frozenset[str]
    unmade: frozenset[str]

    @classmethod
    def of(cls, infos: ConfigInfos) -> JavaKeys:
        """From the JVM's definition of the connector with the config's component names."""
        prefixed = (f"{TRANSFORMS}.", f"{PREDICATES}.", *(p + "." for p, _ in _CONVERTERS))
        passwords = {c.definition.name for c in infos.configs if c.definition.type == "PASSWORD"}
        return cls(
            connector=frozenset(k for k in passwords if not k.startswith(prefixed)),
            components=frozenset(k for k in passwords if k.startswith(prefixed)),
            unmade=frozenset(c.value.name for c in infos.configs if c.value.errors),
        )

    def component_keys(self, use: Named) -> frozenset[str] | None:
        """``PasswordKeys`` of a component the config names: None when it could not be made."""
        if use.key in self.unmade:
            return None
        prefix = use.key.removesuffix("type") if use.key.endswith(".type") else use.key + "."
        return frozenset(k.removeprefix(prefix) for k in self.components if k.startswith(prefix))


def password_keys(definition: ConfigDef | None) -> frozenset[str] | None:
    """The PASSWORD keys of a definition; None for none."""
    if definition is None:
        return None
    return frozenset(k.name for k in definition.keys.values() if k.type is Type.PASSWORD)


def definition(kind: str, name: str) -> ConfigDef | None:
    """The definition of the component of ``kind`` this process runs for ``name``: a class it
    loaded from the plugin path, else the built-in; None when there is none or it gives none.
    A converter says its keys with a ``config_def`` callable on its class (it is created with
    its config); the built-in converters take no secret, so theirs is empty."""
    try:
        if kind == "transformation":
            found: object = new_transform(name).config_def()
        elif kind == "predicate":
            found = new_predicate(name).config_def()
        else:
            loaded = extensions.find(kind, name)
            if loaded is None:
                return ConfigDef() if name.strip() in BUILTINS[kind] else None
            described = getattr(loaded, "config_def", None)
            found = described() if callable(described) else None
    except Exception:  # noqa: BLE001 - a plugin that cannot say: its keys are all hidden
        return None
    return found if isinstance(found, ConfigDef) else None


def local_password_keys(use: Named) -> frozenset[str] | None:
    """``PasswordKeys`` from the definitions this process can read (``definition``)."""
    return password_keys(definition(use.kind, use.name))
