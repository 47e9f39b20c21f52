"""``python -m bench [--smoke] [WORKLOAD ...]``: runs the workloads (all by default), prints the
report and writes it to ``var/bench/`` as JSON and markdown.

``--smoke`` runs each workload once, small, with no warm-up: a check that the harness runs end to
end. Its figures mean nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from bench.env import BenchEnv
from bench.harness import Result, markdown, run, save
from bench.workloads import WORKLOADS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", help=", ".join(WORKLOADS))
    parser.add_argument("--smoke", action="store_true", help="once each, small: a check only")
    parser.add_argument(
        "--repeats", type=int, default=5, help="measured runs per workload, at most its own cap"
    )
    parser.add_argument("--out", type=Path, default=Path("var/bench"), help="where reports go")
    args = parser.parse_args(argv)
    names = args.workloads or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"no workload named {', '.join(unknown)} (there are: {', '.join(WORKLOADS)})")
    repeats, warmups = (1, 0) if args.smoke else (args.repeats, 1)
    # Stopped (a CI's timeout, kill): the workload's peers, the stack and the broker are
    # stopped on the way out, as on an interrupt, rather than left running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    results: list[Result] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="headrace-bench-") as tmp, BenchEnv(Path(tmp)) as env:
        for name in names:
            sys.stdout.write(f"running {name} ...\n")
            sys.stdout.flush()
            try:
                results.append(
                    run(WORKLOADS[name], env, repeats=repeats, warmups=warmups, smoke=args.smoke)
                )
            except Exception:  # noqa: BLE001 - reported, and the run exits non-zero below
                # One workload's failure must not cost the others' figures: report it, go on.
                traceback.print_exc()
                failed.append(name)
    sys.stdout.write(markdown(results) + "\n")
    if not args.smoke and results:
        as_json, as_md = save(results, args.out, failed)
        sys.stdout.write(f"written to {as_json} and {as_md}\n")
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
