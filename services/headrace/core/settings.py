"""Settings shared by every service, read from the environment (flags override them).

| variable | default | meaning |
| --- | --- | --- |
| KAFKA_BOOTSTRAP_SERVERS | 127.0.0.1:9092 | the Kafka cluster (set: no embedded broker) |
| HEADRACE_CLUSTER | headrace | the prefix of every topic name (clusters can share Kafka) |
| HEADRACE_CONFIG_ADDR | 127.0.0.1:50051 | the config service's gRPC address |
| HEADRACE_REST_ADDR | 127.0.0.1:8083 | where the config service serves Kafka Connect's REST API |
| HEADRACE_COORDINATOR_ADDR | 127.0.0.1:50052 | every coordinator replica's address, by ``,`` |
| HEADRACE_EXECUTOR_ADDR | 127.0.0.1:50053 | the Spark executor's gRPC address |
| HEADRACE_OFFSETS_ADDR | empty: the offsets topic | where source offsets are kept instead: a |
| | | standalone process's ``OffsetLogService`` (set by it for its plugins) |
| HEADRACE_PLUGIN_PATH | the built-in plugins | folders holding plugins, separated by ``:`` |
| HEADRACE_VAR | ./var | where logs, sockets and demo output go |
| HEADRACE_FILE_ROOTS | HEADRACE_VAR/files | folders config paths must be in, separated by ``:`` |
| HEADRACE_PLUGIN_CALL_TIMEOUT | 60 | seconds a plugin call may take before its process is ended |
| HEADRACE_PLUGIN_IDLE_STOP | 600 | seconds a worker keeps a plugin process that runs no unit |
| HEADRACE_PLUGIN_SPARE | on | ``on``: a worker running no plugin keeps a plugin host ready |
| SPARK_MASTER | local[*] | the Spark master URL for the executor |
| HEADRACE_WORKER_CONFIG | empty: none | a Kafka Connect worker properties file (``workerconfig``) |
| HEADRACE_CLIENT_OVERRIDE_POLICY | the worker config's, else None | client overrides allowed: |
| | | None, Principal, All or Allowlist |
| HEADRACE_CLIENT_OVERRIDE_ALLOWLIST | the worker config's | the keys Allowlist lets through |
| HEADRACE_TOPIC_TRACKING | the worker config's, else true | record connectors' topics (KIP-558) |
| HEADRACE_TOPIC_TRACKING_ALLOW_RESET | the worker config's, else true | let the API reset them |
| HEADRACE_HOME | found by its marker | the checkout holding ``deploy/`` and ``protos/`` |
| KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_* | PLAINTEXT | see ``kafkasecurity`` |
| HEADRACE_CONFIG_PROVIDERS | empty: none | providers configs may use: file, env, dir, by ``,`` |
| HEADRACE_CONFIG_PROVIDER_PATHS | empty: none | folders file and dir may read, by ``:`` |
| HEADRACE_CONFIG_PROVIDER_ENV_PATTERN | empty: none | a regex of the variables env may read |
| HEADRACE_TLS_CERT | empty: plaintext | PEM: this process's certificate, for every server it runs |
| HEADRACE_TLS_KEY | empty | PEM: that certificate's private key |
| HEADRACE_TLS_CA | empty: plaintext | PEM: the CA clients trust, and client certs are checked by |
| HEADRACE_TLS_CLIENT_AUTH | none | ``required``: servers take only clients with a cert (mTLS) |
| HEADRACE_AUTH_TOKENS | empty: no auth | a file of ``role token`` lines (``core.security.auth``) |
| HEADRACE_AUTH_MTLS_ROLES | empty | ``CN=role`` pairs by ``,``: the role of a client cert's CN |
| HEADRACE_TOKEN | empty | the token this process presents as a client |
| HEADRACE_PLUGIN_TOKEN | empty | the token its plugin processes present (the ``data`` role) |
| HEADRACE_PLUGIN_TLS_CERT, _KEY | empty | the certificate its plugin processes present (mTLS) |
| KAFKA_PLUGIN_SECURITY_PROTOCOL, _SASL_*, _SSL_* | the worker's | plugin processes' Kafka login |
| HEADRACE_CONSOLE_ORIGINS | empty: none | where browsers reach the REST API and console besides |
| | | its own address (a proxy's), as ``https://name[:port]`` by ``,`` |
| HEADRACE_REST_HOSTS | empty: none | DNS names the REST API is served under besides this |
| | | machine's own (``localhost``, its host name), by ``,`` |
| HEADRACE_REST_OPEN | false | ``true``: serve the REST API on a network address with no auth |
| HEADRACE_PLUGIN_SANDBOX | auto | ``auto``, ``required`` or ``off``: confine plugins' files |

The security ones are read and checked by ``headrace.core.security.tls`` and
``headrace.core.security.auth``; docs/operations/security.md says how they fit together. A plugin
process gets none of the process's own credentials: only what :meth:`Settings.for_plugins`
gives it (the ``HEADRACE_PLUGIN_*`` and ``KAFKA_PLUGIN_*`` ones, as its own).

Three more are read by one process each, as its flag's default, and are not fields here: a field is
handed to child processes (``to_env``), and two processes cannot listen on one address.

| variable | flag | default | meaning |
| --- | --- | --- | --- |
| HEADRACE_METRICS_ADDR | ``--metrics-addr`` | empty: none | where a service serves its metrics |
| HEADRACE_WORKER_ADDR | worker's ``--address`` | 127.0.0.1:0 | where a worker serves gRPC health |
| HEADRACE_SPARK_START | executor's ``--spark-start`` | on-demand | ``eager``: with the process |
"""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import immutables

from headrace.core.model import clientconfig, workerconfig
from headrace.core.model.properties import parse_properties
from headrace.core.security.kafkasecurity import KafkaSecurity
from headrace.core.security.references import ProviderPolicy
from headrace.sdk.errors import ConfigException

# The built-in plugins ship inside the distribution as data: plugin-path folders, loaded like any
# other plugin.
BUILTIN_PLUGINS = Path(str(resources.files("headrace") / "plugins"))

# What marks the checkout (or unpacked source tree) that holds deploy/ and protos/.
HOME_MARKER = Path("deploy") / "kafka" / "pom.xml"


def project_home() -> Path:
    """The folder holding ``deploy/`` and ``protos/``: ``HEADRACE_HOME`` when set, else the
    nearest folder, from the working directory up, then from this package up, with the marker."""
    configured = os.environ.get("HEADRACE_HOME")
    if configured:
        return Path(configured).resolve()
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            if (folder / HOME_MARKER).is_file():
                return folder
    raise FileNotFoundError(
        f"no folder with {HOME_MARKER} above {Path.cwd()}: "
        "run from the checkout, or set HEADRACE_HOME"
    )


def _plugin_path() -> tuple[Path, ...]:
    raw = os.environ.get("HEADRACE_PLUGIN_PATH", "")
    return tuple(Path(p) for p in raw.split(":") if p)


def _paths(raw: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in raw.split(":") if p)


def _names(raw: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in raw.split(",") if n.strip())


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(raw: str, variable: str = "HEADRACE_CONSOLE_ORIGINS") -> str:
    """``raw`` as a browser writes it in an ``Origin`` header (``scheme://host[:port]``, lower
    case, no default port); ValueError naming ``variable`` for anything that is not one."""
    try:
        parts = urlsplit(raw.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{variable}: {raw!r} is not an origin: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{variable}: {raw!r} is not an origin: write http(s)://name[:port]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(
            f"{variable}: {raw!r} is not an origin: it holds more than a scheme, a name and a port"
        )
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    shown_port = "" if port in (None, DEFAULT_PORTS[scheme]) else f":{port}"
    return f"{scheme}://{host}{shown_port}"


WORKER_CONFIG = "HEADRACE_WORKER_CONFIG"
WORKER_PROPERTIES = "HEADRACE_WORKER_PROPERTIES"
"""How a service hands the worker config it read to the processes it starts: as JSON, so that
a plugin process, which may not read the file, has it too."""


def _worker_config() -> immutables.Map[str, str]:
    """The worker config: what a parent process handed on, else the file
    ``HEADRACE_WORKER_CONFIG`` names, else none. ValueError naming the variable for a file that
    cannot be read, and for a key headrace does not honour, with the reason."""
    handed = os.environ.get(WORKER_PROPERTIES, "")
    if handed:
        return _handed(handed)
    path = os.environ.get(WORKER_CONFIG, "")
    if not path:
        return immutables.Map()
    try:
        changed = Path(path).stat().st_mtime_ns
    except OSError as exc:
        raise ValueError(f"{WORKER_CONFIG}: cannot read {path}: {exc}") from None
    return _worker_file(path, changed)


# Settings are made often (each validation makes some): the file is read and checked once per
# version of it, the handed JSON parsed once.
@functools.lru_cache(maxsize=8)
def _handed(text: str) -> immutables.Map[str, str]:
    return immutables.Map(json.loads(text))


@functools.lru_cache(maxsize=8)
def _worker_file(path: str, changed_ns: int) -> immutables.Map[str, str]:
    try:
        properties = parse_properties(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{WORKER_CONFIG}: cannot read {path}: {exc}") from None
    try:
        workerconfig.check(properties)
    except ConfigException as exc:
        raise ValueError(f"{WORKER_CONFIG}: {path}: {exc}") from None
    return immutables.Map(properties)


def _file_roots() -> tuple[Path, ...]:
    raw = os.environ.get("HEADRACE_FILE_ROOTS", "")
    return tuple(Path(p) for p in raw.split(":") if p)


PLUGIN_KAFKA_PREFIX = "KAFKA_PLUGIN_"
SANDBOX_MODES = ("auto", "required", "off")
SPARE_MODES = ("on", "off")


def _plugin_kafka() -> KafkaSecurity | None:
    """The data plane's Kafka login, from the ``KAFKA_PLUGIN_*`` variables read as the
    ``KAFKA_*`` ones; None when none is set (plugin processes then log in as their worker)."""
    given = {
        "KAFKA_" + name.removeprefix(PLUGIN_KAFKA_PREFIX): value
        for name, value in os.environ.items()
        if name.startswith(PLUGIN_KAFKA_PREFIX)
    }
    return KafkaSecurity.from_env(given) if given else None


FILES_FOLDER = "files"
"""The folder under ``var_dir`` that is the file root when ``HEADRACE_FILE_ROOTS`` is unset."""
PLUGINS_FOLDER = "plugins"
"""The folder under ``var_dir`` on the plugin path when ``HEADRACE_PLUGIN_PATH`` is unset: where
``headrace plugins install`` installs."""


@dataclass(frozen=True)
class Settings:
    """Where everything is. Immutable; build a new one to change it.

    ``file_roots`` left empty (the variable unset or empty) means ``(var_dir / "files",)``, so
    a Settings built with another ``var_dir`` gets that folder's ``files``. ``plugin_path`` left
    empty means the built-in plugins, then ``var_dir / "plugins"``, where ``headrace plugins
    install`` puts what it installs.
    """

    bootstrap_servers: str = field(
        default_factory=lambda: os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    )
    cluster: str = field(default_factory=lambda: os.environ.get("HEADRACE_CLUSTER", "headrace"))
    config_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_CONFIG_ADDR", "127.0.0.1:50051")
    )
    rest_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_REST_ADDR", "127.0.0.1:8083")
    )
    coordinator_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_COORDINATOR_ADDR", "127.0.0.1:50052")
    )
    executor_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_EXECUTOR_ADDR", "127.0.0.1:50053")
    )
    offsets_addr: str = field(default_factory=lambda: os.environ.get("HEADRACE_OFFSETS_ADDR", ""))
    plugin_path: tuple[Path, ...] = field(default_factory=_plugin_path)
    var_dir: Path = field(default_factory=lambda: Path(os.environ.get("HEADRACE_VAR", "var")))
    spark_master: str = field(default_factory=lambda: os.environ.get("SPARK_MASTER", "local[*]"))
    file_roots: tuple[Path, ...] = field(default_factory=_file_roots)
    plugin_call_timeout_s: float = field(
        default_factory=lambda: float(os.environ.get("HEADRACE_PLUGIN_CALL_TIMEOUT", "60"))
    )
    plugin_idle_stop_s: float = field(
        default_factory=lambda: float(os.environ.get("HEADRACE_PLUGIN_IDLE_STOP", "600"))
    )
    worker_config: immutables.Map[str, str] = field(default_factory=_worker_config)
    # Empty: the worker config's, else None (policy) or none (allowlist); set in __post_init__.
    client_override_policy: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_CLIENT_OVERRIDE_POLICY", "")
    )
    client_override_allowlist: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_CLIENT_OVERRIDE_ALLOWLIST", "")
    )
    # Empty: the worker config's, else true; set in __post_init__.
    topic_tracking: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_TOPIC_TRACKING", "")
    )
    topic_tracking_allow_reset: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_TOPIC_TRACKING_ALLOW_RESET", "")
    )
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity.from_env)
    # Security: empty means unset (plaintext, no auth). Checked when a server or channel is made
    # (headrace.core.security.tls, headrace.core.security.auth), not here: reading settings does no
    # I/O.
    tls_cert: str = field(default_factory=lambda: os.environ.get("HEADRACE_TLS_CERT", ""))
    tls_key: str = field(default_factory=lambda: os.environ.get("HEADRACE_TLS_KEY", ""))
    tls_ca: str = field(default_factory=lambda: os.environ.get("HEADRACE_TLS_CA", ""))
    tls_client_auth: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_TLS_CLIENT_AUTH", "none")
    )
    auth_tokens: str = field(default_factory=lambda: os.environ.get("HEADRACE_AUTH_TOKENS", ""))
    auth_mtls_roles: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_AUTH_MTLS_ROLES", "")
    )
    # Kept out of repr: settings get logged and printed.
    # Stripped: a token holds no white space, and one from a Secret file often ends in a newline.
    token: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_TOKEN", "").strip(), repr=False
    )
    # Config providers (``headrace.core.security.references``): none unless the operator
    # enables them.
    config_providers: tuple[str, ...] = field(
        default_factory=lambda: _names(os.environ.get("HEADRACE_CONFIG_PROVIDERS", ""))
    )
    config_provider_paths: tuple[Path, ...] = field(
        default_factory=lambda: _paths(os.environ.get("HEADRACE_CONFIG_PROVIDER_PATHS", ""))
    )
    config_provider_env_pattern: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_CONFIG_PROVIDER_ENV_PATTERN", "")
    )
    # What this process's plugin processes are given as their own credentials, instead of its
    # own: a token of the data role, a client certificate, a Kafka login the operator scopes.
    plugin_token: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_PLUGIN_TOKEN", "").strip(), repr=False
    )
    plugin_tls_cert: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_PLUGIN_TLS_CERT", "")
    )
    plugin_tls_key: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_PLUGIN_TLS_KEY", "")
    )
    plugin_kafka_security: KafkaSecurity | None = field(default_factory=_plugin_kafka)
    plugin_sandbox: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_PLUGIN_SANDBOX", "auto").strip().lower()
    )
    # Whether a worker that runs no plugin process keeps a plugin host started, its modules
    # loaded, for the first plugin it will need
    # (``headrace.isolation.supervisor.Spare``).
    plugin_spare: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_PLUGIN_SPARE", "on").strip().lower()
    )
    # Where browsers reach the REST API besides its own address: a proxy's public origin
    # (``headrace.config.console.session.Site``). Written back as origins in __post_init__.
    console_origins: tuple[str, ...] = field(
        default_factory=lambda: _names(os.environ.get("HEADRACE_CONSOLE_ORIGINS", ""))
    )
    # The DNS names the REST API answers under besides this machine's own: a request naming
    # another is refused, wherever the API listens (DNS rebinding; ``Site``).
    rest_hosts: tuple[str, ...] = field(
        default_factory=lambda: _names(os.environ.get("HEADRACE_REST_HOSTS", ""))
    )
    # Whether the REST API may listen on a network address with auth off: it refuses to,
    # unless the operator says so here.
    rest_open: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_REST_OPEN", "false").strip().lower()
    )

    @property
    def exactly_once_source(self) -> bool:
        """Whether source tasks write in transactions (the worker config's
        ``exactly.once.source.support``: enabled unless it says otherwise)."""
        return workerconfig.exactly_once_source(self.worker_config)

    def __post_init__(self) -> None:
        if self.plugin_sandbox not in SANDBOX_MODES:
            raise ValueError(
                f"HEADRACE_PLUGIN_SANDBOX: {self.plugin_sandbox!r} is not one of "
                f"{', '.join(SANDBOX_MODES)}"
            )
        if self.plugin_spare not in SPARE_MODES:
            raise ValueError(
                f"HEADRACE_PLUGIN_SPARE: {self.plugin_spare!r} is not one of "
                f"{', '.join(SPARE_MODES)}"
            )
        object.__setattr__(
            self, "console_origins", tuple(origin(given) for given in self.console_origins)
        )
        if self.rest_open not in ("true", "false"):
            raise ValueError(f"HEADRACE_REST_OPEN: {self.rest_open!r} is not true or false")
        if not self.client_override_policy:
            policy = self.worker_config.get(clientconfig.POLICY, "None")
            object.__setattr__(self, "client_override_policy", policy)
        for name, key, variable in (
            ("topic_tracking", workerconfig.TOPIC_TRACKING, "HEADRACE_TOPIC_TRACKING"),
            (
                "topic_tracking_allow_reset",
                workerconfig.TOPIC_TRACKING_RESET,
                "HEADRACE_TOPIC_TRACKING_ALLOW_RESET",
            ),
        ):
            raw = getattr(self, name) or self.worker_config.get(key, "true")
            try:
                value = workerconfig.true_or_false(variable, raw)
            except ConfigException as exc:
                raise ValueError(str(exc)) from None
            object.__setattr__(self, name, "true" if value else "false")
        if not self.client_override_allowlist:
            allowed = self.worker_config.get(clientconfig.ALLOWLIST, "")
            object.__setattr__(self, "client_override_allowlist", allowed)
        if not self.file_roots:
            # The default depends on var_dir, known only once every field is set (frozen, hence
            # object.__setattr__).
            object.__setattr__(self, "file_roots", (self.var_dir / FILES_FOLDER,))
        if not self.plugin_path:
            object.__setattr__(
                self, "plugin_path", (BUILTIN_PLUGINS, self.var_dir / PLUGINS_FOLDER)
            )

    def to_env(self) -> dict[str, str]:
        """The environment that hands these settings to another process, which reads them back
        with ``Settings()``: the one inverse of the fields above."""
        return {
            "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "HEADRACE_CLUSTER": self.cluster,
            "HEADRACE_CONFIG_ADDR": self.config_addr,
            "HEADRACE_REST_ADDR": self.rest_addr,
            "HEADRACE_COORDINATOR_ADDR": self.coordinator_addr,
            "HEADRACE_EXECUTOR_ADDR": self.executor_addr,
            "HEADRACE_OFFSETS_ADDR": self.offsets_addr,
            "HEADRACE_PLUGIN_PATH": ":".join(str(p) for p in self.plugin_path),
            "HEADRACE_VAR": str(self.var_dir),
            "SPARK_MASTER": self.spark_master,
            "HEADRACE_FILE_ROOTS": ":".join(str(p) for p in self.file_roots),
            "HEADRACE_PLUGIN_CALL_TIMEOUT": repr(self.plugin_call_timeout_s),
            "HEADRACE_PLUGIN_IDLE_STOP": repr(self.plugin_idle_stop_s),
            WORKER_PROPERTIES: json.dumps(dict(self.worker_config)) if self.worker_config else "",
            "HEADRACE_CLIENT_OVERRIDE_POLICY": self.client_override_policy,
            "HEADRACE_CLIENT_OVERRIDE_ALLOWLIST": self.client_override_allowlist,
            "HEADRACE_TOPIC_TRACKING": self.topic_tracking,
            "HEADRACE_TOPIC_TRACKING_ALLOW_RESET": self.topic_tracking_allow_reset,
            **self.kafka_security.to_env(),
            "HEADRACE_TLS_CERT": self.tls_cert,
            "HEADRACE_TLS_KEY": self.tls_key,
            "HEADRACE_TLS_CA": self.tls_ca,
            "HEADRACE_TLS_CLIENT_AUTH": self.tls_client_auth,
            "HEADRACE_AUTH_TOKENS": self.auth_tokens,
            "HEADRACE_AUTH_MTLS_ROLES": self.auth_mtls_roles,
            "HEADRACE_TOKEN": self.token,
            "HEADRACE_CONFIG_PROVIDERS": ",".join(self.config_providers),
            "HEADRACE_CONFIG_PROVIDER_PATHS": ":".join(str(p) for p in self.config_provider_paths),
            "HEADRACE_CONFIG_PROVIDER_ENV_PATTERN": self.config_provider_env_pattern,
            "HEADRACE_PLUGIN_TOKEN": self.plugin_token,
            "HEADRACE_PLUGIN_TLS_CERT": self.plugin_tls_cert,
            "HEADRACE_PLUGIN_TLS_KEY": self.plugin_tls_key,
            "HEADRACE_PLUGIN_SANDBOX": self.plugin_sandbox,
            "HEADRACE_PLUGIN_SPARE": self.plugin_spare,
            "HEADRACE_CONSOLE_ORIGINS": ",".join(self.console_origins),
            "HEADRACE_REST_HOSTS": ",".join(self.rest_hosts),
            "HEADRACE_REST_OPEN": self.rest_open,
            **{
                PLUGIN_KAFKA_PREFIX + name.removeprefix("KAFKA_"): value
                for name, value in (
                    self.plugin_kafka_security.to_env() if self.plugin_kafka_security else {}
                ).items()
            },
        }

    def provider_policy(self) -> ProviderPolicy:
        """What the operator lets config references read (``HEADRACE_CONFIG_PROVIDER*``)."""
        return ProviderPolicy(
            self.config_providers,
            tuple(PurePosixPath(p) for p in self.config_provider_paths),
            self.config_provider_env_pattern,
        )

    def credentials(self) -> list[str]:
        """The secret values these settings hold: tokens, and the Kafka logins' passwords."""
        logins = [self.kafka_security, self.plugin_kafka_security]
        return [
            value
            for value in (
                self.token,
                self.plugin_token,
                *(k.sasl_password for k in logins if k is not None),
                *(k.ssl_key_password for k in logins if k is not None),
            )
            if value
        ]

    def for_plugins(self) -> Settings:
        """What this process's plugin processes run with: its settings, but as credentials
        only those meant for them (``plugin_*``, each in the place of its own), and no tokens
        file or mTLS roles to read. A plugin process runs third-party code: it never holds
        the service's token, key or control-plane Kafka login."""
        return replace(
            self,
            token=self.plugin_token,
            tls_cert=self.plugin_tls_cert,
            tls_key=self.plugin_tls_key,
            auth_tokens="",
            auth_mtls_roles="",
            kafka_security=self.plugin_kafka_security or self.kafka_security,
            plugin_token="",
            plugin_tls_cert="",
            plugin_tls_key="",
            plugin_kafka_security=None,
        )

    @property
    def tracks_topics(self) -> bool:
        """Whether connectors' topics are recorded and shown (KIP-558)."""
        return self.topic_tracking == "true"

    @property
    def topic_reset_allowed(self) -> bool:
        """Whether the API may reset a connector's recorded topics."""
        return self.tracks_topics and self.topic_tracking_allow_reset == "true"

    @property
    def coordinator_addrs(self) -> tuple[str, ...]:
        """Every coordinator replica's address; workers join whichever is active."""
        return tuple(a.strip() for a in self.coordinator_addr.split(",") if a.strip())

    def topic(self, role: str) -> str:
        """The full name of one of the cluster's topics: configs, offsets, status, assignments."""
        return f"{self.cluster}-{role}"

    def kafka_client(self) -> dict[str, Any]:
        """What every aiokafka client of the cluster is made with: the bootstrap servers and the
        security settings."""
        return self.kafka_security.client_kwargs(self.bootstrap_servers)


def settings_or_exit(prog: str) -> Settings:
    """The environment's settings, for a process's start: one that cannot be used (a worker
    config key headrace does not honour, a sandbox mode it does not know) ends the process
    with exit code 2 and the message naming the variable, as a bad flag does."""
    try:
        settings = Settings()
    except ValueError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        raise SystemExit(2) from None
    # Its own credentials are hidden in every line it logs, as its connectors' secrets are: a
    # client's error or a log level set for the cluster may quote one.
    from headrace.core.security import secrets  # secrets reads settings: imported once made

    secrets.register(settings.credentials())
    return settings
