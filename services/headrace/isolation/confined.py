"""Runs a command confined as a plugin process is (``sandbox``): for what runs third-party code
outside a plugin process, the JVM scan of a Java plugin location::

    python -m headrace.isolation.confined [--run P] [--read P] [--write P] -- COMMAND ARGS...

It restricts itself to the system's files, its own ``/proc`` entry and the paths named
(``sandbox.system_paths``), then becomes the command, in the environment it was given: the
restriction cannot be lifted, and holds for whatever the command starts. Without Landlock,
``HEADRACE_PLUGIN_SANDBOX`` says what to do, as for a plugin process: ``auto`` runs the command
unconfined and says so on stderr, ``required`` refuses (exit 2), ``off`` never confines.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from headrace.isolation import sandbox

MODE_ENV = "HEADRACE_PLUGIN_SANDBOX"


def command(
    argv: Sequence[str],
    run: Sequence[Path] = (),
    read: Sequence[Path] = (),
    write: Sequence[Path] = (),
) -> list[str]:
    """The command line that runs ``argv`` confined to what is named."""
    named = [
        *(a for p in run for a in ("--run", str(p))),
        *(a for p in read for a in ("--read", str(p))),
        *(a for p in write for a in ("--write", str(p))),
    ]
    return [sys.executable, "-m", "headrace.isolation.confined", *named, "--", *argv]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="headrace.isolation.confined", description=__doc__)
    for kind in ("run", "read", "write"):
        parser.add_argument(f"--{kind}", type=Path, action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    given = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not given:
        parser.error("no command to run")
    mode = os.environ.get(MODE_ENV, "auto").strip().lower()
    if mode != "off":
        try:
            sandbox.confine(sandbox.system_paths(args.run, args.read, args.write))
        except sandbox.SandboxError as exc:
            if mode == "required":
                parser.exit(2, f"{parser.prog}: cannot confine {given[0]}: {exc}\n")
            sys.stderr.write(f"{parser.prog}: running {given[0]} unconfined: {exc}\n")
    program = shutil.which(given[0]) or given[0]
    os.execv(program, given)


if __name__ == "__main__":
    main()
