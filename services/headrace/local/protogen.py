"""Regenerates the protobuf and gRPC code under services/headrace/v1 from protos/headrace/v1.

The generated modules import each other as ``headrace.v1``. Run through ``make proto``; a unit
test fails when the committed code is stale.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

from headrace.core.settings import project_home

ROOT = project_home()
PROTO_ROOT = ROOT / "protos"
TARGET = ROOT / "services" / "headrace" / "v1"
INIT = '"""Generated protobuf and gRPC code (make proto). Do not edit."""\n'


def generate(out_dir: Path) -> None:
    """Writes the generated package ``headrace/v1`` below ``out_dir``."""
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{Path(protoc.__file__).parent / '_proto'}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    (out_dir / "headrace" / "v1" / "__init__.py").write_text(INIT)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        shutil.rmtree(TARGET, ignore_errors=True)
        shutil.copytree(Path(tmp) / "headrace" / "v1", TARGET)
    sys.stdout.write(f"generated {TARGET.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
