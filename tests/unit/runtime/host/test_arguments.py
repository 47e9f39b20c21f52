"""The plugin host's command line: a host is told its plugin, or waits as a spare to be."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.runtime.host.__main__ import parse_args


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
