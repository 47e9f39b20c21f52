"""The folder of a plugin host's socket: only the worker's user may enter it (the host makes
the socket itself 0600, checked with a real host in ``tests/integration/test_plugin_host.py``)."""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

from headrace.core.model.plugins import PluginDescriptor
from headrace.core.settings import Settings
from headrace.isolation.hostfolder import private_folder
from headrace.isolation.supervisor import host_env, plugin_key


def test_the_plugin_hosts_folder_is_private_even_when_it_existed(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert stat.S_IMODE(private_folder(folder).stat().st_mode) == 0o700
    fresh = private_folder(tmp_path / "a" / "b")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700


def test_a_plugin_process_gets_the_plugins_credentials_and_none_of_its_service_s() -> None:
    settings = Settings(
        token="service-token-" + "s" * 20,
        auth_tokens="/etc/headrace/auth/tokens",
        tls_cert="/etc/headrace/tls/tls.crt",
        tls_key="/etc/headrace/tls/tls.key",
        tls_ca="/etc/headrace/tls/ca.crt",
        plugin_token="plugin-token-" + "p" * 20,
        config_provider_env_pattern="DB_.*",
    )
    environ = {
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "HEADRACE_TOKEN": settings.token,
        "KAFKA_SASL_PASSWORD": "the-workers-kafka-password",
        "AWS_SECRET_ACCESS_KEY": "the-hosts-cloud-key",
        "DB_PASSWORD": "for-the-env-provider",
    }
    env = host_env(settings, "worker-1", environ)
    assert env["HEADRACE_TOKEN"] == settings.plugin_token
    assert env["HEADRACE_TLS_CA"] == settings.tls_ca  # it trusts the servers it calls
    for kept_back in ("HEADRACE_AUTH_TOKENS", "HEADRACE_TLS_KEY", "HEADRACE_TLS_CERT"):
        assert env[kept_back] == "", kept_back
    assert "the-workers-kafka-password" not in env.values()
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert settings.token not in env.values()
    assert (env["PATH"], env["LC_ALL"], env["DB_PASSWORD"]) == (
        "/usr/bin",
        "C.UTF-8",
        "for-the-env-provider",
    )
    assert env["HEADRACE_WORKER_ID"] == "worker-1"


def test_two_plugins_of_one_simple_name_and_version_run_in_processes_of_their_own() -> None:
    """Found trying a hostile Java connector beside the Python one of the same simple name: the
    process was named by the simple name, and a connector whose class is one ran in the other's
    process, as the other."""
    python = PluginDescriptor(
        "prying_source.PryingSourceConnector", "1.0.0", "source", "prying_source", "X", Path("a")
    )
    java = replace(
        python, class_name="headrace.testing.PryingSourceConnector", runtime="java", module=""
    )
    assert plugin_key(python) != plugin_key(java)
    assert plugin_key(python) == "prying_source.PryingSourceConnector-1.0.0"


def test_the_java_connectors_of_one_location_and_version_share_a_process(tmp_path: Path) -> None:
    """FileStream's source and sink on one worker ran two plugin processes and two JVMs."""
    location = tmp_path / "connect-file" / "3.9.1"
    source = PluginDescriptor(
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "3.9.1",
        "source",
        "",
        "",
        location,
        runtime="java",
    )
    sink = replace(source, class_name=source.class_name.replace("Source", "Sink"), type="sink")
    assert plugin_key(source) == plugin_key(sink)
    assert plugin_key(source).startswith("connect-file-3.9.1+")
    assert plugin_key(replace(sink, version="4.0.0")) != plugin_key(source)
    elsewhere = replace(sink, folder=tmp_path / "other" / "3.9.1")
    assert plugin_key(elsewhere) != plugin_key(source)
