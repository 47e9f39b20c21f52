"""Hosts a config may not send a connector to, and URLs shown without their passwords."""

from __future__ import annotations

import pytest

from headrace.sdk import ConfigException
from headrace.sdk.network import BadUrl, postgresql_url, redacted, safe_url, unsafe_host


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
    with pytest.raises(ConfigException, match="does not name a host"):
        safe_url("connection.url", "jdbc:postgresql:///db")
    with pytest.raises(ConfigException, match="it names no host"):
        safe_url("connection.url", "file:///etc/passwd")


def test_passwords_in_query_and_user_info_are_hidden() -> None:
    assert redacted("jdbc:postgresql://h/db?user=u&password=p&sslmode=require") == (
        "jdbc:postgresql://h/db?user=u&password=***&sslmode=require"
    )
    assert redacted("postgresql://u:p4ss@h/db") == "postgresql://u:***@h/db"


def test_a_postgresql_url_is_read_as_its_driver_reads_it() -> None:
    url = postgresql_url("jdbc:postgresql://[::1]:5433/my%20db?user=u&password=p%26w&sslmode=")
    assert (url.host, url.port, url.database) == ("::1", 5433, "my db")
    assert url.params == {"user": "u", "password": "p&w", "sslmode": ""}
    assert url.jdbc() == "jdbc:postgresql://[::1]:5433/my%20db"  # no parameter left in it
    assert postgresql_url("jdbc:postgresql://db.example.com/shop").port == 5432


@pytest.mark.parametrize(
    ("url", "says"),
    [
        # The driver's query starts at the first '?', a '#' included: no fragment hides one.
        ("jdbc:postgresql://h/db#?sslfactory=x", "'#' is not part of"),
        ("jdbc:postgresql://h,169.254.169.254:80/db", "names several hosts"),
        ("jdbc:postgresql://[127.0.0.1]/db", "brackets hold an IPv6 address, not 127.0.0.1"),
        ("jdbc:postgresql://[::1/db", "does not close"),
        ("jdbc:postgresql://u:pw@h/db", "as parameters"),
        ("jdbc:postgresql://h:99999/db", "no valid port"),
        ("jdbc:postgresql:///tmp/db", "does not name a host"),
        ("jdbc:postgresql://h%2F..%2Ftmp/db", "not a host name"),
        ("jdbc:postgresql://h", "does not name a host and a database"),
    ],
)
def test_a_postgresql_url_read_two_ways_is_refused(url: str, says: str) -> None:
    with pytest.raises(BadUrl) as refused:
        postgresql_url(url)
    assert says in str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "jdbc:postgresql://db,169.254.169.254/x",
        "jdbc:postgresql://[169.254.169.254]/x",
        "jdbc:postgresql://db/x#?host=169.254.169.254",
        "jdbc:mysql://db,169.254.169.254/x",
        "http://[169.254.169.254]/",
    ],
)
def test_a_url_the_host_check_cannot_read_one_way_is_refused_not_passed(url: str) -> None:
    with pytest.raises(ConfigException) as refused:
        safe_url("connection.url", url)
    assert "connection.url" in str(refused.value)
