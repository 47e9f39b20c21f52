"""The config providers resolve references in the plugin process, within the operator's folders
and variables; task configs go back to the worker with resolved values put back as references."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.properties import parse_properties
from headrace.core.security import secrets
from headrace.core.security.references import BadReference, reverse
from headrace.core.settings import Settings
from headrace.runtime.host.hosted import HostedPlugin, no_stored_offsets
from headrace.runtime.host.providers import Providers
from headrace.sdk import ConfigDef, ConfigType, SourceConnector, SourceRecord, SourceTask


@pytest.fixture(autouse=True)
def nothing_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_registered", frozenset())
    monkeypatch.setattr(secrets, "_in_order", ())


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "db.properties").write_text("# the database\nuser = app\npassword=s3cr3t-db\n")
    (folder / "token").write_text("tok-from-dir\n")
    return folder


def providers(allowed: Path, **environ: str) -> Providers:
    settings = Settings(
        config_providers=("file", "env", "dir"),
        config_provider_paths=(allowed,),
        config_provider_env_pattern="DB_.*",
    )
    return Providers.of(settings, environ)


def test_each_provider_resolves_its_references(allowed: Path) -> None:
    config = {
        "password": f"${{file:{allowed}/db.properties:password}}",
        "url": f"jdbc://${{file:{allowed}/db.properties:user}}@db",
        "token": f"${{dir:{allowed}:token}}",
        "key": "${env:DB_KEY}",
        "plain": "as-is ${topic}",
    }
    resolved = providers(allowed, DB_KEY="k3y-from-env").resolve(config)
    assert resolved.config == {
        "password": "s3cr3t-db",
        "url": "jdbc://app@db",
        "token": "tok-from-dir\n",  # a file's whole content, as Connect's DirectoryConfigProvider
        "key": "k3y-from-env",
        "plain": "as-is ${topic}",
    }
    assert set(resolved.changed) == {"password", "url", "token", "key"}
    assert {"s3cr3t-db", "tok-from-dir\n", "k3y-from-env"} <= secrets.registered()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${env:DB_MISSING}", "the worker has no environment variable of that name"),
        ("${env:PATH}", "does not match HEADRACE_CONFIG_PROVIDER_ENV_PATTERN"),
        ("${file:{allowed}/db.properties:nope}", "the file has no key 'nope'"),
        ("${file:{allowed}/none.properties:a}", "cannot read"),
        ("${dir:{allowed}:none}", "cannot read"),
        ("${file:{allowed}/../outside.properties:a}", "the path must be absolute, without '..'"),
        ("${file:/etc/hostname:a}", "outside the folders config providers may read"),
        ("${file:{allowed}/link.properties:a}", "set by HEADRACE_CONFIG_PROVIDER_PATHS"),
    ],
)
def test_a_reference_that_cannot_be_resolved_names_the_key_and_the_reference_only(
    allowed: Path, value: str, message: str
) -> None:
    outside = allowed.parent / "outside.properties"
    outside.write_text("a=0utside-value\n")
    (allowed / "link.properties").symlink_to(outside)  # a symlink leading out
    reference = value.replace("{allowed}", str(allowed))
    with pytest.raises(BadReference) as raised:
        providers(allowed).resolve({"db.password": reference})
    text = str(raised.value)
    assert text.startswith(f"db.password: {reference}") or text.startswith("Invalid value")
    assert "db.password" in text and message in text
    assert "0utside-value" not in text and "s3cr3t-db" not in text


def test_properties_are_read_as_java_reads_them() -> None:
    text = "\n".join(
        [
            "! a comment",
            "  spaced   =  value with spaces",
            "colon:v",
            "blank key only",
            "escaped\\=key = a\\tb\\u0041",
            "long = one, \\",
            "       two",
            "empty",
        ]
    )
    assert parse_properties(text) == {
        "spaced": "value with spaces",
        "colon": "v",
        "blank": "key only",
        "escaped=key": "a\tbA",
        "long": "one, two",
        "empty": "",
    }


def test_reverse_puts_resolved_values_back_as_their_references() -> None:
    raw = {"password": "${env:DB_PW}", "n": "${env:DB_N}", "user": "app"}
    resolved = {"password": "s3cr3t-pw", "n": "1", "user": "app"}
    tasks = [
        {"password": "s3cr3t-pw", "n": "1", "copy": "s3cr3t-pw", "task": "1", "user": "app"},
    ]
    assert reverse(tasks, raw, resolved) == [
        {
            "password": "${env:DB_PW}",
            "n": "${env:DB_N}",  # the same key: put back whatever its length
            "copy": "${env:DB_PW}",  # another key with the very value
            "task": "1",  # a short value elsewhere is left alone
            "user": "app",
        }
    ]


def test_a_task_config_carrying_a_resolved_value_inside_another_is_refused() -> None:
    raw, resolved = {"password": "${env:DB_PW}"}, {"password": "s3cr3t-pw"}
    with pytest.raises(BadReference, match="url: a task config carries the resolved value of"):
        reverse([{"url": "db://u:s3cr3t-pw@h"}], raw, resolved)


class Task(SourceTask):
    async def start(self, config: Mapping[str, str]) -> None:
        pass

    async def poll(self) -> list[SourceRecord]:
        return []


class Copying(SourceConnector):
    """Hands every task its whole config, as many connectors do."""

    def config(self) -> ConfigDef:
        return ConfigDef().define("literal", ConfigType.PASSWORD, "")

    async def start(self, config: Mapping[str, str]) -> None:
        self.config_ = dict(config)

    def task_class(self) -> type[Task]:
        return Task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config_)]


async def test_a_connector_starts_resolved_and_its_task_configs_leave_unresolved(
    allowed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DB_PW", "s3cr3t-from-env")
    settings = Settings(
        bootstrap_servers="unused:1",
        config_providers=("env", "file"),
        config_provider_paths=(allowed,),
        config_provider_env_pattern="DB_.*",
    )
    descriptor = PluginDescriptor("x.Copying", "1.0.0", "source", "m", "a", Path("."))
    host = HostedPlugin(descriptor, Copying, settings, 1.0, no_stored_offsets)
    config = {
        "pw": "${env:DB_PW}",
        "db": f"${{file:{allowed}/db.properties:password}}",
        "literal": "l1teral-password",
    }
    tasks = await host.start_connector("c", config)
    assert tasks == [config]
    assert host._connectors["c"].config["pw"] == "s3cr3t-from-env"
    assert {"s3cr3t-from-env", "s3cr3t-db", "l1teral-password"} <= secrets.registered()
    await host.stop_connector("c", deleted=False)


async def test_a_connector_whose_reference_cannot_be_resolved_does_not_start(
    allowed: Path,
) -> None:
    settings = Settings(bootstrap_servers="unused:1", config_providers=("env",))
    descriptor = PluginDescriptor("x.Copying", "1.0.0", "source", "m", "a", Path("."))
    host = HostedPlugin(descriptor, Copying, settings, 1.0, no_stored_offsets)
    with pytest.raises(BadReference, match=r"pw: \$\{env:DB_PW\}: no environment variable"):
        await host.start_connector("c", {"pw": "${env:DB_PW}"})
    assert "c" not in host._connectors
