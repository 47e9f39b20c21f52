"""Pure-Python wheels built by hand, offline: what a plugin version bundles in its ``wheels/``.

A wheel is a zip holding the package and a ``<name>-<version>.dist-info`` folder with
``METADATA``, ``WHEEL`` and ``RECORD`` (the hash and size of every other file), as the binary
distribution format spells them; no build backend, no index.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path


def build_wheel(dest: Path, name: str, version: str, source: str | None = None) -> Path:
    """A wheel of distribution ``name`` at ``version``, written into ``dest``: one package, the
    name with ``-`` and ``.`` as ``_`` (``hr-pin`` -> ``hr_pin``), whose ``__init__.py`` is
    ``source`` (by default ``VERSION = "<version>"``)."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    info = f"{stem}-{version}.dist-info"
    files = {
        f"{stem}/__init__.py": source if source is not None else f'VERSION = "{version}"\n',
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tests.wheels\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
    }
    record = [
        f"{path},{_digest(text.encode())},{len(text.encode())}" for path, text in files.items()
    ]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def _digest(data: bytes) -> str:
    encoded = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={encoded}"
