"""The plugin host's command line: a host is told its plugin, or waits as a spare to be."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from headrace.runtime.host.__main__ import ClaimError, parse_args, read_claim


def test_a_host_needs_its_manifest_and_socket_unless_it_is_a_spare(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for given in ([], ["--manifest", "m.json"], ["--socket", "host.sock"]):
        with pytest.raises(SystemExit) as refused:
            parse_args(given)
        assert refused.value.code == 2
        assert "--manifest and --socket are required, unless --spare" in capsys.readouterr().err
    assert parse_args(["--spare", "--parent-pid", "1"]).spare
    told = parse_args(["--manifest", "m.json", "--socket", "host.sock"])
    assert (told.manifest, told.socket, told.spare) == (Path("m.json"), Path("host.sock"), False)


def claim(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def test_a_spare_s_claim_gives_the_arguments_its_log_and_the_title_of_a_host_for_its_plugin() -> (
    None
):
    argv = ["--manifest", "/p/m.json", "--socket", "/run/a/host.sock", "--parent-pid", "7"]
    read = read_claim(claim(argv=argv, log="/logs/w1-plugin-a.log"))
    assert (read.args.manifest, read.args.socket, read.args.parent_pid, read.args.spare) == (
        Path("/p/m.json"),
        Path("/run/a/host.sock"),
        7,
        False,
    )
    assert read.log == Path("/logs/w1-plugin-a.log")
    assert read.title.endswith("-m headrace.runtime.host " + " ".join(argv))


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"", "one line of JSON"),
        (b"{not json\n", "one line of JSON"),
        (b"\xff\xfe\n", "one line of JSON"),
        (b'["--manifest"]\n', "keys argv, log and key"),
        (claim(argv=[]), "keys argv, log and key"),
        (claim(argv=[], log="/l", extra=1), "keys argv, log and key"),
        (claim(argv="--manifest m.json", log="/l"), "argv: a claim's arguments are a list"),
        (claim(argv=["--stop-timeout", 3], log="/l"), "argv: a claim's arguments are a list"),
        (claim(argv=["--manifest", "m.json", "--socket", "s"], log=""), "log: a claim names"),
        (claim(argv=["--manifest", "m.json", "--socket", "s"], log=3), "log: a claim names"),
        (claim(argv=["--manifest", "m.json"], log="/l"), "argv: not a plugin host's arguments"),
        (claim(argv=["--bogus"], log="/l"), "argv: not a plugin host's arguments"),
        (claim(argv=["--spare"], log="/l"), "argv: a spare's claim cannot make it a spare"),
    ],
)
def test_a_claim_that_does_not_say_what_to_serve_is_refused_naming_why(
    line: bytes, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ClaimError, match=re.escape(says)):
        read_claim(line)
    capsys.readouterr()  # argparse's own account of a bad argv, on stderr
