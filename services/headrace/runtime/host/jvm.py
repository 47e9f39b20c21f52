"""The JVM host beside a Java plugin's Python plugin process: started once, as this process's
child, and reached over a Unix socket in the process's private folder (``JvmPluginHost``).

The JVM reads its standard input, which this process holds, and exits when that closes, however
this process ends. If the JVM exits first (a crash, an OutOfMemoryError), this process exits too
(``JVM_LOST``), and the worker fails only its units. The adapters that make the Java connector
look like an SDK connector are ``headrace.runtime.host.java``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import grpc

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.observability import log, metrics
from headrace.core.rpc import CHILD_GRPC_OPTIONS, close_channel
from headrace.core.security.guard import HOST_KEY_HEADER, new_host_key, with_host_key
from headrace.isolation import jvm
from headrace.sdk.errors import ConnectError, RetriableError
from headrace.v1 import jvm_pb2 as pb
from headrace.v1 import jvm_pb2_grpc as pb_grpc

JVM_LOST = 76
"""This process's exit code when its JVM exited under it."""
READY_WAIT_S = 120.0
STOP_WAIT_S = 5.0
LEVELS_WAIT_S = 5.0


class JavaError(ConnectError):
    """The Java plugin raised; the message is its stack trace."""


class JavaRetriableError(RetriableError):
    """The Java plugin raised Connect's RetriableException: the loop retries, as Connect's
    worker does."""


MAX_LINE = 16_384
"""The most of one line of the JVM's output that reaches the log."""
_HEADER = re.compile(r"^\[[^\]]*\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")
_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
}
JVM_LOGGER = "jvm"


async def relay(output: asyncio.StreamReader) -> None:
    """Writes what the JVM writes (its log4j lines, a crash's message) to this process's log, a
    line an event of the ``jvm`` logger: framed as JSON and with the secrets this process holds
    hidden, as every line it logs, rather than passed on as the JVM wrote it. Each line takes
    the level of the log4j line it belongs to (a stack trace, its message's)."""
    logger = logging.getLogger(JVM_LOGGER)
    logger.setLevel(logging.DEBUG)  # the JVM's own levels chose what it writes
    level, pending = logging.WARNING, b""
    while chunk := await output.read(65536):
        *lines, pending = (pending + chunk).split(b"\n")
        if len(pending) > MAX_LINE:
            lines, pending = [*lines, pending], b""
        for line in lines:
            level = _written(logger, line, level)
    if pending:
        _written(logger, pending, level)


def _written(logger: logging.Logger, raw: bytes, level: int) -> int:
    text = raw[:MAX_LINE].decode(errors="replace").rstrip("\r")
    header = _HEADER.match(text)
    if header is not None:
        level = _LEVELS.get(
            header.group(1), logging.WARNING if header.group(1) == "WARN" else logging.ERROR
        )
    if text.strip():
        logger.log(level, "%s", text)
    return level


def _error(exc: grpc.RpcError) -> ConnectError:
    details = (exc.details() if hasattr(exc, "details") else None) or str(exc)
    if hasattr(exc, "code") and exc.code() == grpc.StatusCode.UNAVAILABLE:
        return JavaRetriableError(details)
    return JavaError(details)


class JvmHost:
    """The JVM of this plugin process: started once, its stubs, its connectors' contexts."""

    def __init__(self, descriptor: PluginDescriptor, folder: Path, heap: str) -> None:
        self.descriptor = descriptor
        self._socket = folder / "jvm.sock"
        self._temp = folder / "tmp"
        self._heap = heap
        self._proc: asyncio.subprocess.Process | None = None
        self._channel: grpc.aio.Channel | None = None
        self._sync_channel: grpc.Channel | None = None
        self.stub: pb_grpc.JvmPluginHostStub
        self.sync: pb_grpc.JvmPluginHostStub
        self.contexts: dict[str, Any] = {}
        self._closing = False
        self._tasks: list[asyncio.Task[None]] = []
        self._levels: dict[str, str] = {}  # the cluster log levels the JVM holds
        self._relaying: asyncio.Task[None] | None = None  # its output, to this process's log
        self._setting_levels: asyncio.Task[None] | None = None
        self._sync_key: tuple[tuple[str, str], ...] = ()  # what each synchronous call carries

    async def start(self, wait_s: float = READY_WAIT_S) -> None:
        self._temp.mkdir(mode=0o700, exist_ok=True)
        self._proc = await asyncio.create_subprocess_exec(
            *jvm.command(
                self.descriptor.folder,
                self._heap,
                self._temp,
                "--socket",
                str(self._socket),
                more=jvm.options(os.environ.get("HEADRACE_JVM_OPTS")),
            ),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._relaying = asyncio.create_task(relay(self._proc.stdout), name="jvm-output")
        # The key every call carries, on the first line of its input: only this process can
        # call its JVM (HostKeyCheck's counterpart in the host, HostServer.keyed).
        key = new_host_key()
        self._proc.stdin.write(f"{key}\n".encode())
        await self._proc.stdin.drain()
        target = f"unix:{self._socket}"
        self._channel = grpc.aio.insecure_channel(
            target, options=CHILD_GRPC_OPTIONS, interceptors=with_host_key(key)
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            if self._proc.returncode is not None:
                raise PluginError(f"the JVM host exited with {self._proc.returncode} as it started")
            try:
                await asyncio.wait_for(self._channel.channel_ready(), timeout=0.5)
                break
            except TimeoutError:
                if loop.time() > deadline:
                    raise PluginError(f"the JVM host did not serve in {wait_s:.0f}s") from None
        self._sync_channel = grpc.insecure_channel(target, options=CHILD_GRPC_OPTIONS)
        self._sync_key = ((HOST_KEY_HEADER, key),)
        self.stub = pb_grpc.JvmPluginHostStub(self._channel)
        self.sync = pb_grpc.JvmPluginHostStub(self._sync_channel)
        self._tasks = [
            asyncio.create_task(self._watch_exit(), name="jvm-exit"),
            asyncio.create_task(self._watch_events(), name="jvm-events"),
        ]

    async def _watch_exit(self) -> None:
        assert self._proc is not None
        code = await self._proc.wait()
        await self._relayed()  # what it wrote last, to the log first
        if not self._closing:
            log.get().error("jvm_host_lost", code=code)
            metrics.process_exiting()
            os._exit(JVM_LOST)

    async def _watch_events(self) -> None:
        with contextlib.suppress(grpc.RpcError, asyncio.CancelledError):
            async for event in self.stub.Watch(pb.JvmWatchRequest()):
                context = self.contexts.get(event.connector)
                if context is None:
                    continue
                if event.reconfiguration_requested:
                    context.request_task_reconfiguration()
                if event.error:
                    context.raise_error(JavaError(event.error))

    def hold_levels(self, levels: Mapping[str, str]) -> None:
        """KIP-976: the cluster's log levels, as this process was told them, set in the JVM
        too (its connectors' own loggers) when they change. In the background, so that a busy
        JVM never holds up the keep-alive that brought them; one that fails is tried again at
        the next."""
        wanted = dict(levels)
        busy = self._setting_levels is not None and not self._setting_levels.done()
        if wanted == self._levels or busy or self._closing:
            return
        self._setting_levels = asyncio.create_task(self._set_levels(wanted))

    async def _set_levels(self, levels: dict[str, str]) -> None:
        request = pb.LogLevelsRequest(levels=levels)
        try:
            answer = await self.stub.SetLogLevels(request, timeout=LEVELS_WAIT_S)
        except grpc.aio.AioRpcError as exc:
            log.get().warning("jvm_log_levels_failed", code=exc.code().name, error=exc.details())
            return
        except Exception as exc:  # noqa: BLE001 - a task of its own: said, not lost
            log.get().warning("jvm_log_levels_failed", error=repr(exc))
            return
        self._levels = levels
        log.get().info("jvm_log_levels_set", loggers=len(answer.changed))

    async def _relayed(self) -> None:
        """Waits a while for its output to be relayed to its end."""
        if self._relaying is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._relaying), STOP_WAIT_S)

    async def close(self) -> None:
        """Ends the JVM: its input closes, then it is killed if it lingers."""
        self._closing = True
        for task in [*self._tasks, *([self._setting_levels] if self._setting_levels else [])]:
            task.cancel()
        if self._proc is not None and self._proc.returncode is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                await asyncio.wait_for(self._proc.wait(), STOP_WAIT_S)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        await self._relayed()
        if self._relaying is not None:
            self._relaying.cancel()
        if self._channel is not None:
            await self._channel.close()
        if self._sync_channel is not None:
            close_channel(self._sync_channel)

    def call(self, method: str, request: Any) -> Any:
        """A call that plugin code answers at once (definitions, task configs): synchronous,
        as the SDK's methods it stands for are."""
        try:
            return getattr(self.sync, method)(request, metadata=self._sync_key)
        except grpc.RpcError as exc:
            raise _error(exc) from exc

    async def acall(self, method: str, request: Any) -> Any:
        try:
            return await getattr(self.stub, method)(request)
        except grpc.RpcError as exc:
            raise _error(exc) from exc


def heap(connectors: Iterable[PluginDescriptor]) -> str:
    """The JVM's maximum heap: the largest that ``HEADRACE_JVM_HEAP`` gives the connector
    versions it runs, else the default (``headrace.isolation.jvm.heap``)."""
    setting = os.environ.get("HEADRACE_JVM_HEAP")
    return jvm.location_heap(((d.class_name, d.version) for d in connectors), setting)
