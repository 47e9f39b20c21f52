"""The Spark executor of a standalone worker, started only when a connector needs it: before the
first plugin process of a plugin that writes through it (its manifest's ``"executor": true``),
for a connector's tasks or to validate its config. It then runs, a child of this process, until
the worker stops. An executor already answering at ``HEADRACE_EXECUTOR_ADDR`` (one an operator
runs) is used as it is.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from headrace.clients import health
from headrace.clients.executor import SERVICE
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.observability import log
from headrace.core.rpc import split_address
from headrace.core.security import tls
from headrace.core.settings import Settings

START_S = 180.0  # a first Spark session on a busy machine
STOP_S = 40.0  # the executor's own grace for batches in flight, and some
HEALTH_CALL_S = 1.0


class ExecutorOnDemand:
    """Starts the executor at ``settings.executor_addr`` the first time a plugin that uses it is
    about to start; :meth:`stop` stops it, if it started it."""

    def __init__(self, settings: Settings, log_file: Path) -> None:
        self._settings = settings
        self._log_file = log_file
        self._process: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()

    async def __call__(self, plugin: PluginDescriptor) -> None:
        if not plugin.uses_executor:
            return
        async with self._starting:
            if self._process is not None and self._process.returncode is None:
                return
            if await self._serving():
                return  # one that was there already, or the one started, serving
            await self._start(plugin)

    async def _start(self, plugin: PluginDescriptor) -> None:
        host, port = split_address(self._settings.executor_addr)
        log.get().info(
            "executor_starting", address=self._settings.executor_addr, for_plugin=plugin.class_name
        )
        self._log_file.parent.mkdir(parents=True, exist_ok=True)
        with self._log_file.open("ab") as out:
            process = self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "headrace.executor",
                "--host",
                host,
                "--port",
                str(port),
                # It stops when this process is gone, even after a SIGKILL, as plugin hosts do.
                "--parent-pid",
                str(os.getpid()),
                env={**os.environ, **self._settings.to_env()},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,  # a terminal's Ctrl-C is for this process to pass on
            )
        deadline = time.monotonic() + START_S
        while not await self._serving():
            if process.returncode is not None:
                raise PluginError(
                    f"{plugin.class_name} writes through the Spark executor, which exited with "
                    f"{process.returncode} as it started: see {self._log_file}"
                )
            if time.monotonic() > deadline:
                await self.stop()
                raise PluginError(
                    f"{plugin.class_name} writes through the Spark executor, which was not "
                    f"ready within {START_S:.0f} s: see {self._log_file}"
                )
            await asyncio.sleep(0.2)
        log.get().info("executor_started", address=self._settings.executor_addr)

    async def _serving(self) -> bool:
        async with tls.aio_channel(self._settings.executor_addr, self._settings) as channel:
            return await health.serving_async(channel, SERVICE, HEALTH_CALL_S)

    async def stop(self) -> None:
        """Stops the executor this started, if it runs: asked first, then killed."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), timeout=STOP_S)
        except TimeoutError:
            process.kill()
            await process.wait()
