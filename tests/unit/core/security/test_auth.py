"""Roles, tokens and the table of what each call needs (``headrace.core.security.auth``), without
I/O but for the settings read from files in a temporary folder."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import headrace.v1
from headrace.core.security import auth
from headrace.core.security.auth import ADMIN, INTERNAL, READ, Need, Policy
from headrace.core.security.tls import SecurityError
from headrace.core.settings import Settings

ADMIN_TOKEN = "a" * 32
READ_TOKEN = "r" * 32
INTERNAL_TOKEN = "i" * 32
POLICY = Policy(
    {ADMIN_TOKEN: ADMIN, READ_TOKEN: READ, INTERNAL_TOKEN: INTERNAL},
    {"ops": ADMIN, "worker-1": INTERNAL},
)


def every_rpc_in_the_protos() -> set[str]:
    names: set[str] = set()
    for module in pkgutil.iter_modules(headrace.v1.__path__):
        if not module.name.endswith("_pb2"):
            continue
        generated = importlib.import_module(f"headrace.v1.{module.name}")
        for service in generated.DESCRIPTOR.services_by_name.values():
            names.update(f"/{service.full_name}/{m.name}" for m in service.methods)
    return names


def test_every_rpc_in_the_protos_has_a_need_and_the_table_names_no_other() -> None:
    rpcs = every_rpc_in_the_protos()
    assert len(rpcs) > 30  # the scan found the services
    assert rpcs == set(auth.METHODS)


def test_health_is_open_reflection_a_read_and_an_unknown_call_has_no_need() -> None:
    assert auth.need_of("/grpc.health.v1.Health/Check") is Need.OPEN
    assert auth.need_of("/grpc.health.v1.Health/Watch") is Need.OPEN
    assert auth.need_of("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo") is (
        Need.READ
    )
    assert auth.need_of("/headrace.v1.ConfigService/DropEverything") is None


def test_reads_changes_and_internal_calls_need_their_roles() -> None:
    assert auth.need_of("/headrace.v1.ConfigService/ListConnectors") is Need.READ
    assert auth.need_of("/headrace.v1.ConfigService/ValidateConfig") is Need.READ
    assert auth.need_of("/headrace.v1.ConfigService/DeleteConnector") is Need.ADMIN
    assert auth.need_of("/headrace.v1.ConfigService/AlterOffsets") is Need.ADMIN
    assert auth.need_of("/headrace.v1.TaskConfigService/PutTaskConfigs") is Need.SIGNED
    assert auth.need_of("/headrace.v1.Coordinator/Join") is Need.INTERNAL
    assert auth.need_of("/headrace.v1.Executor/WriteBatch") is Need.DATA
    assert auth.need_of("/headrace.v1.PluginHost/StartTask") is Need.LOCAL


@pytest.mark.parametrize(
    ("method", "path", "need"),
    [
        ("GET", "/health", Need.OPEN),
        ("GET", "/connectors", Need.READ),
        ("GET", "/", Need.READ),
        ("PUT", "/connector-plugins/Gen/config/validate", Need.READ),
        ("POST", "/connectors", Need.ADMIN),
        ("PUT", "/connectors/x/pause", Need.ADMIN),
        ("DELETE", "/connectors/x/offsets", Need.ADMIN),
        ("PUT", "/admin/loggers/root", Need.ADMIN),
    ],
)
def test_rest_calls_need_read_for_reads_and_validate_admin_for_the_rest(
    method: str, path: str, need: Need
) -> None:
    assert auth.rest_need(method, path) is need


def test_no_credentials_is_unauthenticated_naming_the_role_needed() -> None:
    refused = POLICY.refusal("CreateConnector", Need.ADMIN, None, None)
    assert refused is not None and not refused.authenticated
    assert "CreateConnector needs the role admin" in refused.message
    assert "authorization: Bearer" in refused.message


def test_an_unknown_token_or_scheme_is_unauthenticated() -> None:
    unknown = POLICY.refusal("GetConnector", Need.READ, "Bearer " + "x" * 32, None)
    assert unknown is not None and not unknown.authenticated
    assert "admin or read" in unknown.message and "not known" in unknown.message
    basic = POLICY.refusal("GetConnector", Need.READ, "Basic " + READ_TOKEN, None)
    assert basic is not None and not basic.authenticated


def test_a_read_token_reads_but_changes_nothing() -> None:
    assert POLICY.refusal("GetConnector", Need.READ, f"Bearer {READ_TOKEN}", None) is None
    refused = POLICY.refusal("CreateConnector", Need.ADMIN, f"bearer {READ_TOKEN}", None)
    assert refused is not None and refused.authenticated
    assert refused.message == "CreateConnector needs the role admin, not read"


def test_admin_may_do_everything_internal_only_internal_calls() -> None:
    for need in (Need.READ, Need.ADMIN, Need.INTERNAL):
        assert POLICY.refusal("call", need, f"Bearer {ADMIN_TOKEN}", None) is None
    assert POLICY.refusal("Join", Need.INTERNAL, f"Bearer {INTERNAL_TOKEN}", None) is None
    refused = POLICY.refusal("GetConnector", Need.READ, f"Bearer {INTERNAL_TOKEN}", None)
    assert refused is not None and refused.authenticated
    assert "needs the role admin or read, not internal" in refused.message


def test_a_certificate_name_carries_its_role() -> None:
    assert POLICY.refusal("CreateConnector", Need.ADMIN, None, "ops") is None
    assert POLICY.refusal("Join", Need.INTERNAL, None, "worker-1") is None
    too_low = POLICY.refusal("CreateConnector", Need.ADMIN, None, "worker-1")
    assert too_low is not None and too_low.authenticated
    nameless = POLICY.refusal("CreateConnector", Need.ADMIN, None, "stranger")
    assert nameless is not None and not nameless.authenticated
    assert "CN=stranger has no role" in nameless.message


def test_open_and_signed_calls_need_nothing_local_ones_are_never_served_on_a_network() -> None:
    assert POLICY.refusal("Check", Need.OPEN, None, None) is None
    assert POLICY.refusal("PutTaskConfigs", Need.SIGNED, None, None) is None
    local = POLICY.refusal("StartTask", Need.LOCAL, f"Bearer {ADMIN_TOKEN}", "ops")
    assert local is not None and local.authenticated
    assert "Unix socket" in local.message


def test_a_tokens_file_gives_each_token_its_role() -> None:
    text = (
        f"# operators\n\nadmin {ADMIN_TOKEN}\n  read   {READ_TOKEN}  \ninternal {INTERNAL_TOKEN}\n"
    )
    assert auth.parse_tokens(text, "t") == {
        ADMIN_TOKEN: ADMIN,
        READ_TOKEN: READ,
        INTERNAL_TOKEN: INTERNAL,
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"admin {ADMIN_TOKEN}\nwriter {READ_TOKEN}\n", "line 2: unknown role 'writer'"),
        (f"admin {ADMIN_TOKEN} a b\n", "line 1: expected 'role token' or 'role token name'"),
        ("admin\n", "line 1: expected 'role token' or 'role token name', found 1 fields"),
        ("read short\n", "line 1: the token is shorter than 16 characters"),
        (f"admin {ADMIN_TOKEN}\nread {ADMIN_TOKEN}\n", "line 2: the same token as line 1"),
        ("# nothing\n", "tokens.txt holds no token"),
    ],
)
def test_a_bad_tokens_file_is_refused_naming_the_variable_and_line(text: str, problem: str) -> None:
    with pytest.raises(SecurityError) as refused:
        auth.parse_tokens(text, "tokens.txt")
    assert str(refused.value).startswith("HEADRACE_AUTH_TOKENS: ")
    assert problem in str(refused.value)


def test_certificate_names_map_to_roles() -> None:
    assert auth.parse_common_names(" ops = admin ,worker-1=internal,") == {
        "ops": ADMIN,
        "worker-1": INTERNAL,
    }
    assert auth.parse_common_names("") == {}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ops", "'ops' is not CN=role"),
        ("=admin", "'=admin' is not CN=role"),
        ("ops=root", "unknown role 'root' for ops"),
        ("ops=admin,ops=read", "ops is given twice"),
    ],
)
def test_bad_certificate_names_are_refused(text: str, problem: str) -> None:
    with pytest.raises(SecurityError, match=r"^HEADRACE_AUTH_MTLS_ROLES: ") as refused:
        auth.parse_common_names(text)
    assert problem in str(refused.value)


def test_no_auth_setting_means_no_policy() -> None:
    assert auth.load(Settings()) is None


def test_auth_settings_need_tls_and_a_readable_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"admin {ADMIN_TOKEN}\n")
    with pytest.raises(SecurityError, match=r"^HEADRACE_AUTH_TOKENS: .*HEADRACE_TLS_CERT is not"):
        auth.load(Settings(auth_tokens=str(tokens)))
    with pytest.raises(SecurityError, match=r"^HEADRACE_AUTH_MTLS_ROLES: .*not required"):
        auth.load(Settings(auth_mtls_roles="ops=admin", tls_cert="c", tls_key="k"))
    with pytest.raises(SecurityError, match=r"^HEADRACE_AUTH_TOKENS: no file at .*missing"):
        auth.load(Settings(auth_tokens=str(tmp_path / "missing"), tls_cert="c", tls_key="k"))
    loaded = auth.load(Settings(auth_tokens=str(tokens), tls_cert="c", tls_key="k"))
    assert loaded == Policy({ADMIN_TOKEN: ADMIN}, {})


DATA_TOKEN = "d" * 32
BOUND = Policy(
    tokens={INTERNAL_TOKEN: "internal", "w" * 32: "internal", DATA_TOKEN: "data"},
    common_names={"worker-7": "internal", "ops": "admin"},
    holders={INTERNAL_TOKEN: "worker-1", "w" * 32: "pool-*"},
)


@pytest.mark.parametrize(
    ("worker_id", "authorization", "common_name", "refused"),
    [
        ("worker-1", f"Bearer {INTERNAL_TOKEN}", None, None),
        ("worker-2", f"Bearer {INTERNAL_TOKEN}", None, "name worker-1, not 'worker-2'"),
        ("pool-3", "Bearer " + "w" * 32, None, None),  # a shared token, bound to a prefix
        ("worker-1", "Bearer " + "w" * 32, None, "name pool-*, not 'worker-1'"),
        ("worker-7", None, "worker-7", None),  # a certificate names its holder
        ("worker-1", None, "worker-7", "name worker-7"),
        ("worker-1", f"Bearer {DATA_TOKEN}", None, "name no worker"),  # a plugin's token
        ("worker-1", "Bearer " + "x" * 32, "ops", "name ops"),
    ],
)
def test_a_worker_joins_only_under_the_id_its_credential_names(
    worker_id: str, authorization: str | None, common_name: str | None, refused: str | None
) -> None:
    found = BOUND.join_refusal(worker_id, authorization, common_name)
    assert (found is None) if refused is None else (found is not None and refused in found)


def test_a_plugin_s_data_role_writes_batches_and_nothing_else() -> None:
    write, join = "/headrace.v1.Executor/WriteStream", "/headrace.v1.Coordinator/Join"
    assert BOUND.refusal(write, Need.DATA, f"Bearer {DATA_TOKEN}", None) is None
    assert BOUND.refusal(write, Need.DATA, f"Bearer {INTERNAL_TOKEN}", None) is None
    refused = BOUND.refusal(join, Need.INTERNAL, f"Bearer {DATA_TOKEN}", None)
    assert refused is not None and refused.authenticated
    read = BOUND.refusal(
        "/headrace.v1.ConfigService/GetConnector", Need.READ, f"Bearer {DATA_TOKEN}", None
    )
    assert read is not None and "not data" in read.message


def test_a_tokens_file_may_name_each_token_s_holder() -> None:
    text = f"internal {INTERNAL_TOKEN} worker-1\nread {READ_TOKEN}\n"
    tokens, holders = auth.parse_token_lines(text, "tokens.txt")
    assert tokens == {INTERNAL_TOKEN: "internal", READ_TOKEN: "read"}
    assert holders == {INTERNAL_TOKEN: "worker-1"}
