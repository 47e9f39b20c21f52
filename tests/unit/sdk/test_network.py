"""Hosts a config may not send a connector to, and URLs shown without their passwords."""

from __future__ import annotations

import pytest

from headrace.sdk import ConfigException
from headrace.sdk.network import redacted, safe_url, unsafe_host


@pytest.mark.parametrize(
    ("host", "says"),
    [
        ("169.254.169.254", "169.254.169.254 is a cloud metadata service"),
        ("169.254.10.1", "169.254.10.1 is link-local"),
        ("[fe80::1]", "fe80::1 is link-local"),
        ("fd00:ec2::254", "is a cloud metadata service"),
        ("::ffff:169.254.169.254", "is a cloud metadata service"),
        ("100.100.100.200", "is a cloud metadata service"),
        ("metadata.google.internal.", "names a cloud metadata service"),
    ],
)
def test_link_local_and_metadata_hosts_are_refused_with_the_reason(host: str, says: str) -> None:
    reason = unsafe_host(host)
    assert reason is not None and says in reason


@pytest.mark.parametrize("host", ["127.0.0.1", "10.1.2.3", "db.example.com", "localhost", "::1"])
def test_ordinary_hosts_pass(host: str) -> None:
    assert unsafe_host(host) is None


def test_a_url_is_checked_by_its_host_and_shown_without_its_password() -> None:
    safe_url("connection.url", "jdbc:postgresql://127.0.0.1:5432/db")
    safe_url("connection.url", None)  # no value: a required key's own check says so
    with pytest.raises(ConfigException) as refused:
        safe_url("connection.url", "jdbc:postgresql://169.254.169.254/db?password=s3cret")
    message = str(refused.value)
    assert "connection.url" in message and "cloud metadata service" in message
    assert "s3cret" not in message and "password=***" in message
    with pytest.raises(ConfigException, match="it names no host"):
        safe_url("connection.url", "jdbc:postgresql:///db")


def test_passwords_in_query_and_user_info_are_hidden() -> None:
    assert redacted("jdbc:postgresql://h/db?user=u&password=p&sslmode=require") == (
        "jdbc:postgresql://h/db?user=u&password=***&sslmode=require"
    )
    assert redacted("postgresql://u:p4ss@h/db") == "postgresql://u:***@h/db"
