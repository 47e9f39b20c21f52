"""Who may call what: roles, what proves them, and the one table of what every call needs.

| role | may call |
| --- | --- |
| ``read`` | what changes nothing: get, list, status, offsets, plugins, validate, reflection |
| ``data`` | what plugin processes ask of the executor: writing batches, running a sink's SQL |
| ``internal`` | what services ask of each other: joining the coordinator, and what ``data`` may |
| ``admin`` | everything: what ``read`` and ``internal`` may, and every change |

A caller proves a role with a bearer token (gRPC metadata ``authorization: Bearer <token>``, the
HTTP header of the same name) that ``HEADRACE_AUTH_TOKENS`` lists, or, under mTLS, with its
certificate, whose subject CN ``HEADRACE_AUTH_MTLS_ROLES`` maps to a role. The tokens file holds
one ``role token [name]`` line each; blank lines and lines starting with ``#`` are skipped; a
token is at least :data:`MIN_TOKEN_CHARS` characters, and appears once. The roles variable is
``CN=role`` pairs separated by ``,`` (``worker-1=internal,ops=admin``).

A credential may also name who holds it: a token by its line's third field, a certificate by
its CN. A worker joins the coordinator only under the id its credential names
(:meth:`Policy.join_refusal`): a name ending in ``*`` takes every id that starts with the rest
(``worker-*`` for a StatefulSet sharing one token), which binds less than a name of its own.

Two kinds of call need no role: the health service (probes carry no credentials), and the
worker's task-config writes, which the config service accepts only signed with the cluster's
session key (``headrace.core.security.sessionkey``): only readers of the configs topic can sign. The
plugin host's calls are served only on its Unix socket, which only the worker's user can reach;
a server that serves them on a network port refuses every one.

With neither variable set nothing is checked, as before. This module only decides: the gRPC
interceptors (``headrace.core.security.guard``) and the REST middleware (``headrace.config.rest``)
ask it.
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from headrace.core.security.tls import SecurityError
from headrace.core.settings import Settings

READ = "read"
ADMIN = "admin"
INTERNAL = "internal"
DATA = "data"
ROLES = (READ, ADMIN, INTERNAL, DATA)
MIN_TOKEN_CHARS = 16
BEARER = "bearer"


class Need(enum.Enum):
    """What a call needs of its caller."""

    OPEN = "open"  # nothing: health
    READ = READ
    ADMIN = ADMIN
    INTERNAL = INTERNAL
    DATA = DATA
    OBSERVE = "observe"  # a read the cluster's own services make too (the coordinator's history)
    PARSE = "parse"  # what any role may ask: whether a query parses
    SIGNED = "signed"  # nothing here: the service checks the session-key signature
    LOCAL = "local"  # served only on the worker's private Unix socket; refused on a network


# The roles that satisfy each need.
GRANTED_BY: Mapping[Need, frozenset[str]] = {
    Need.READ: frozenset({READ, ADMIN}),
    Need.ADMIN: frozenset({ADMIN}),
    Need.INTERNAL: frozenset({INTERNAL, ADMIN}),
    Need.DATA: frozenset({DATA, INTERNAL, ADMIN}),
    Need.OBSERVE: frozenset({READ, INTERNAL, ADMIN}),
    Need.PARSE: frozenset({READ, DATA, INTERNAL, ADMIN}),
    Need.LOCAL: frozenset(),
}

_CONFIG = "/headrace.v1.ConfigService/"
_EXECUTOR = "/headrace.v1.Executor/"
_PLUGIN = "/headrace.v1.PluginHost/"
_JVM = "/headrace.v1.JvmPluginHost/"

METHODS: Mapping[str, Need] = {
    **{
        _CONFIG + name: Need.READ
        for name in (
            "GetConnector",
            "ListConnectors",
            "GetConnectorStatus",
            "GetTaskStatus",
            "GetOffsets",
            "GetConnectorTopics",
            "ListPlugins",
            "GetPluginConfig",
            "ValidateConfig",
            "ListInstalledPlugins",
        )
    },
    **{
        _CONFIG + name: Need.ADMIN
        for name in (
            "CreateConnector",
            "PutConnectorConfig",
            "PatchConnectorConfig",
            "DeleteConnector",
            "PauseConnector",
            "ResumeConnector",
            "StopConnector",
            "RestartConnector",
            "RestartTask",
            "AlterOffsets",
            "ResetOffsets",
            "ResetConnectorTopics",
            "InstallPlugin",
            "UninstallPlugin",
        )
    },
    # Migrations: starting or cancelling one changes connectors on both sides.
    "/headrace.v1.MigrationService/StartMigration": Need.ADMIN,
    "/headrace.v1.MigrationService/CancelMigration": Need.ADMIN,
    "/headrace.v1.MigrationService/GetMigration": Need.READ,
    "/headrace.v1.MigrationService/ListMigrations": Need.READ,
    "/headrace.v1.TaskConfigService/PutTaskConfigs": Need.SIGNED,
    "/headrace.v1.Coordinator/Join": Need.INTERNAL,
    "/headrace.v1.Coordinator/History": Need.OBSERVE,  # the config service's uninstall asks
    # Standalone mode's plugin processes read and store source offsets in its file.
    "/headrace.v1.OffsetLogService/ReadOffsets": Need.DATA,
    "/headrace.v1.OffsetLogService/AppendOffsets": Need.DATA,
    # Plugin processes write batches and run transforms' SQL; reading what landed is a read.
    _EXECUTOR + "WriteBatch": Need.DATA,
    _EXECUTOR + "WriteStream": Need.DATA,
    _EXECUTOR + "Query": Need.DATA,
    _EXECUTOR + "CountRows": Need.READ,
    # Validation asks whether a sink's query parses (in a plugin process, with the data role):
    # nothing runs, nothing is read.
    _EXECUTOR + "CheckSql": Need.PARSE,
    _EXECUTOR + "ReadRows": Need.READ,
    _EXECUTOR + "SetLogLevels": Need.INTERNAL,  # from workers, passing the cluster's on
    **{
        _PLUGIN + name: Need.LOCAL
        for name in (
            "Validate",
            "AlterOffsets",
            "Describe",
            "StartConnector",
            "StopConnector",
            "StartTask",
            "StopTask",
            "Cleanup",
            "KeepAlive",
            "ForgetTopics",
            "Watch",
        )
    },
    # A plugin process's JVM host: served on a socket in the process's private folder, to it.
    **{
        _JVM + name: Need.LOCAL
        for name in (
            "Scan",
            "Validate",
            "AlterOffsets",
            "Capabilities",
            "StartConnector",
            "TaskConfigs",
            "StartTask",
            "Stop",
            "Poll",
            "Commit",
            "Put",
            "PreCommit",
            "Partitions",
            "Watch",
            "SetLogLevels",
        )
    },
}
"""What each of headrace's own calls needs, by its full method name. A test checks that every
call in ``protos/`` is here, so that no new call is served without a decision."""

SERVICES: Mapping[str, Need] = {
    "grpc.health.v1.Health": Need.OPEN,
    # Reflection describes the APIs: as much as reading them tells.
    "grpc.reflection.v1alpha.ServerReflection": Need.READ,
    "grpc.reflection.v1.ServerReflection": Need.READ,
}
"""What every call of the standard services each server also serves needs."""


def need_of(method: str) -> Need | None:
    """What the call named ``/package.Service/Method`` needs; None for a call in no table,
    which is refused."""
    found = METHODS.get(method)
    if found is not None:
        return found
    return SERVICES.get(method.lstrip("/").partition("/")[0])


def rest_need(method: str, path: str) -> Need:
    """What a call of the REST API needs: ``GET /health``, the console's assets and its login
    and logout nothing, reads (the console's page among them) and the validate PUT the read
    role, the rest admin."""
    if path.rstrip("/") in ("/health", "/ui/login", "/ui/logout") or path.startswith("/ui/static/"):
        return Need.OPEN
    if method in ("GET", "HEAD", "OPTIONS"):
        return Need.READ
    if method == "PUT" and path.startswith("/connector-plugins/") and path.endswith("/validate"):
        return Need.READ
    return Need.ADMIN


@dataclass(frozen=True)
class Refusal:
    """Why a call is refused: ``authenticated`` False when the caller proved no identity
    (UNAUTHENTICATED, 401), True when it did, with too low a role (PERMISSION_DENIED, 403)."""

    authenticated: bool
    message: str


@dataclass(frozen=True)
class Policy:
    """The roles tokens and certificate names carry."""

    tokens: Mapping[str, str] = field(default_factory=dict)  # token -> role
    common_names: Mapping[str, str] = field(default_factory=dict)  # certificate CN -> role
    holders: Mapping[str, str] = field(default_factory=dict)  # token -> the name it is bound to

    def names_of(self, authorization: str | None, common_name: str | None) -> set[str]:
        """Who the caller's credentials say it is: its certificate's CN (when the CN has a
        role) and the name its token's line gives."""
        names = (
            {common_name} if common_name is not None and common_name in self.common_names else set()
        )
        token = bearer_token(authorization)
        if token is not None and self.role_of(token) is not None:
            names |= {h for t, h in self.holders.items() if hmac.compare_digest(t, token)}
        return names

    def join_refusal(
        self, worker_id: str, authorization: str | None, common_name: str | None
    ) -> str | None:
        """Why the caller may not join the coordinator as ``worker_id``; None when one of its
        credentials names that id (see the module's docstring)."""
        names = self.names_of(authorization, common_name)
        if any(_names(n, worker_id) for n in names):
            return None
        named = ", ".join(sorted(names)) or "no worker"
        return (
            f"join: a worker joins under the id its credential names (its certificate's CN, or "
            f"the third field of its token's line); this caller's credentials name {named}, "
            f"not {worker_id!r}"
        )

    def role_of(self, token: str) -> str | None:
        """The role of a token; compared with every known token in constant time, so how long
        an answer takes says nothing of how much of a token was right."""
        found = None
        given = token.encode()
        for known, role in self.tokens.items():
            if hmac.compare_digest(given, known.encode()):
                found = role
        return found

    def refusal(
        self, what: str, need: Need, authorization: str | None, common_name: str | None
    ) -> Refusal | None:
        """Why ``what`` (a method or request, for the message) must be refused; None to let
        it through. ``authorization`` is the header's value, ``common_name`` the client
        certificate's CN (None without one)."""
        if need in (Need.OPEN, Need.SIGNED):
            return None
        granted = GRANTED_BY[need]
        if not granted:
            return Refusal(True, f"{what} is served only on the worker's private Unix socket")
        wanted = " or ".join(sorted(granted))
        roles = set()
        if common_name is not None and common_name in self.common_names:
            roles.add(self.common_names[common_name])
        token = bearer_token(authorization)
        if token is not None:
            role = self.role_of(token)
            if role is None and not roles:
                return Refusal(False, f"{what} needs the role {wanted}: the token is not known")
            if role is not None:
                roles.add(role)
        if not roles:
            cert = f" (certificate CN={common_name} has no role)" if common_name else ""
            return Refusal(
                False,
                f"{what} needs the role {wanted}: send a token as 'authorization: Bearer "
                f"<token>'{cert}",
            )
        if roles & granted:
            return None
        return Refusal(True, f"{what} needs the role {wanted}, not {' or '.join(sorted(roles))}")


def _names(name: str, worker_id: str) -> bool:
    """Whether a credential's name takes ``worker_id``: the same, or a prefix of it then ``*``."""
    return name == worker_id or (name.endswith("*") and worker_id.startswith(name[:-1]))


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``authorization`` value ``Bearer <token>``; None for anything else."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == BEARER and token else None


def parse_tokens(text: str, source: str) -> dict[str, str]:
    """token -> role, from the lines of a tokens file (``source`` names it in errors)."""
    return parse_token_lines(text, source)[0]


def parse_token_lines(text: str, source: str) -> tuple[dict[str, str], dict[str, str]]:
    """(token -> role, token -> the name it is bound to), from the lines of a tokens file."""
    tokens: dict[str, str] = {}
    holders: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"HEADRACE_AUTH_TOKENS: {source} line {number}"
        parts = line.split()
        if len(parts) not in (2, 3):
            raise SecurityError(
                f"{where}: expected 'role token' or 'role token name', found {len(parts)} fields"
            )
        role, token = parts[:2]
        if len(parts) == 3:
            holders[token] = parts[2]
        if role not in ROLES:
            raise SecurityError(f"{where}: unknown role {role!r}; the roles are {', '.join(ROLES)}")
        if len(token) < MIN_TOKEN_CHARS:
            raise SecurityError(f"{where}: the token is shorter than {MIN_TOKEN_CHARS} characters")
        if token in tokens:
            raise SecurityError(f"{where}: the same token as line {lines[token]}")
        tokens[token], lines[token] = role, number
    if not tokens:
        raise SecurityError(f"HEADRACE_AUTH_TOKENS: {source} holds no token")
    return tokens, holders


def parse_common_names(text: str) -> dict[str, str]:
    """certificate CN -> role, from ``CN=role`` pairs separated by ``,``."""
    names: dict[str, str] = {}
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        name, sep, role = (part.strip() for part in pair.partition("="))
        if not sep or not name:
            raise SecurityError(f"HEADRACE_AUTH_MTLS_ROLES: {pair!r} is not CN=role")
        if role not in ROLES:
            raise SecurityError(
                f"HEADRACE_AUTH_MTLS_ROLES: unknown role {role!r} for {name}; "
                f"the roles are {', '.join(ROLES)}"
            )
        if name in names:
            raise SecurityError(f"HEADRACE_AUTH_MTLS_ROLES: {name} is given twice")
        names[name] = role
    return names


def load(settings: Settings) -> Policy | None:
    """The server's policy, checked; None when auth is off (neither variable set)."""
    if not settings.auth_tokens and not settings.auth_mtls_roles:
        return None
    if not settings.tls_cert:
        variable = "HEADRACE_AUTH_TOKENS" if settings.auth_tokens else "HEADRACE_AUTH_MTLS_ROLES"
        raise SecurityError(
            f"{variable}: set while HEADRACE_TLS_CERT is not: credentials are taken only over TLS"
        )
    if settings.auth_mtls_roles and settings.tls_client_auth != "required":
        raise SecurityError(
            "HEADRACE_AUTH_MTLS_ROLES: set while HEADRACE_TLS_CLIENT_AUTH is not required: "
            "no client certificate would be checked"
        )
    tokens: dict[str, str] = {}
    holders: dict[str, str] = {}
    if settings.auth_tokens:
        path = settings.auth_tokens
        try:
            text = Path(path).read_text()
        except FileNotFoundError:
            raise SecurityError(f"HEADRACE_AUTH_TOKENS: no file at {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise SecurityError(f"HEADRACE_AUTH_TOKENS: cannot read {path}: {exc}") from None
        tokens, holders = parse_token_lines(text, path)
    return Policy(tokens, parse_common_names(settings.auth_mtls_roles), holders)
