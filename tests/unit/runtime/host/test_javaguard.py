"""A Java connector's config held to the file roots and the address guard by the keys Connect's
connectors read (found by the second perimeter review: Kafka's FileStreamSource read
/etc/passwd, as only headrace's own connectors checked their paths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.runtime.host import javaguard
from headrace.sdk.errors import ConfigException
from headrace.sdk.paths import Paths


def test_a_file_is_resolved_inside_the_roots_and_refused_outside(tmp_path: Path) -> None:
    paths = Paths((tmp_path,))
    assert javaguard.checked({"file": "in.txt", "topic": "t"}, paths) == {
        "file": str(tmp_path / "in.txt"),
        "topic": "t",
    }
    assert javaguard.checked({"file": ""}, paths) == {"file": ""}  # its process's stdin
    for outside in ("/etc/passwd", "../escape.txt", str(tmp_path.parent / "x")):
        with pytest.raises(ConfigException, match="is outside the allowed folders"):
            javaguard.checked({"file": outside}, paths)
    assert javaguard.problems({"file": "/etc/passwd"}, Paths()) != {}  # no root: none allowed


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("connection.url", "jdbc:postgresql://169.254.169.254/db", "cloud metadata service"),
        ("database.hostname", "fe80::1", "link-local"),
        ("hostname", "metadata.google.internal", "cloud metadata service"),
        ("source.cluster.bootstrap.servers", "ok:9092,169.254.169.254:9092", "metadata"),
        ("target.cluster.bootstrap.servers", "[fe80::2]:9092", "link-local"),
    ],
)
def test_a_place_to_connect_to_is_held_to_the_address_guard(
    key: str, value: str, says: str
) -> None:
    found = javaguard.problems({key: value, "other": "169.254.169.254"}, Paths())
    assert list(found) == [key] and says in found[key]
    with pytest.raises(ConfigException, match=says):
        javaguard.checked({key: value}, Paths())


def test_reachable_places_pass() -> None:
    config = {
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
        "database.hostname": "10.0.0.5",
        "source.cluster.bootstrap.servers": "127.0.0.1:9092,[::1]:9093",
    }
    assert javaguard.problems(config, Paths()) == {}
