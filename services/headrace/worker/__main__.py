"""``python -m headrace.worker``: one worker node of the group."""

from __future__ import annotations

import argparse
import asyncio
import socket

from headrace.core import log, runner
from headrace.core.plugins import installed
from headrace.core.settings import Settings
from headrace.core.topics import ensure_topics
from headrace.worker.worker import Worker


async def serve(settings: Settings, worker_id: str) -> None:
    await ensure_topics(settings)
    run_dir = settings.var_dir / "run"
    log_dir = settings.var_dir / "log"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    worker = Worker(settings, worker_id, installed(settings.plugin_path), run_dir, log_dir)
    main = asyncio.create_task(worker.run(), name="worker")
    signalled = asyncio.create_task(runner.until_signalled())
    done, _ = await asyncio.wait({main, signalled}, return_when=asyncio.FIRST_COMPLETED)
    if signalled in done:
        worker.shutdown()
    await main
    await runner.cancel(signalled)


def main() -> None:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="headrace-worker", description=__doc__)
    parser.add_argument("--worker-id", default=socket.gethostname())
    args = parser.parse_args()
    log.configure("worker", worker=args.worker_id)
    runner.run(lambda: serve(settings, args.worker_id))


if __name__ == "__main__":
    main()
