"""``python -m tests.chaos [--duration S] [--seed N] [--folder DIR]``: one nemesis run; exits 1
on any violation, printing the seed and the history that replay it."""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from pathlib import Path

from tests.chaos.run import ChaosRun


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of faults")
    parser.add_argument("--seed", type=int, default=None, help="the plan's seed (random if unset)")
    parser.add_argument("--folder", type=Path, default=None, help="where the run writes")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    folder = args.folder or Path("var") / "chaos" / f"{time.strftime('%Y%m%d-%H%M%S')}-seed-{seed}"
    folder = folder.resolve()
    print(f"nemesis run: seed {seed}, {args.duration:.0f} s of faults, in {folder}", flush=True)
    # Stopped (Ctrl-C, SIGTERM), the run still stops every process it started.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    return ChaosRun(folder, seed, args.duration).main()


if __name__ == "__main__":
    sys.exit(main())
