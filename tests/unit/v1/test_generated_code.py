"""The generated protobuf code under services/headrace/v1 must match protos/ (run `make proto`)."""

from __future__ import annotations

from pathlib import Path

from headrace.local import protogen


def test_generated_code_is_current(tmp_path: Path) -> None:
    protogen.generate(tmp_path)
    fresh = tmp_path / "headrace" / "v1"
    names = sorted(p.name for p in fresh.iterdir() if p.is_file())
    committed = sorted(p.name for p in protogen.TARGET.iterdir() if p.is_file())
    assert names == committed, "run `make proto`"
    stale = [n for n in names if (fresh / n).read_bytes() != (protogen.TARGET / n).read_bytes()]
    assert not stale, f"stale generated code, run `make proto`: {stale}"
