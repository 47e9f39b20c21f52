"""What every service process shares: a gRPC server on an address, and running until SIGTERM or
SIGINT, then shutting down in order."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Coroutine
from typing import Any

import grpc
from aiokafka.errors import ProducerFenced

from headrace.core.observability import log
from headrace.core.observability.health import Health
from headrace.core.rpc import GRPC_OPTIONS
from headrace.core.security import secrets
from headrace.core.security.guard import ServerSecurity


async def start_server(
    address: str,
    register: Callable[[grpc.aio.Server], None],
    health: Health,
    security: ServerSecurity,
) -> grpc.aio.Server:
    """A started gRPC server on ``address`` (host:port or unix:path), with the health service
    and reflection beside the APIs ``register`` adds: serving, its APIs not ready yet. It
    speaks TLS and checks roles as ``security`` says."""
    server = grpc.aio.server(options=GRPC_OPTIONS, interceptors=security.interceptors())
    register(server)
    health.register(server)
    if security.bind(server, address) == 0 and not address.startswith("unix:"):
        raise OSError(f"cannot listen on {address}")
    await server.start()
    await health.serving()
    return server


async def until_signalled() -> None:
    """Returns when the process is asked to stop (SIGTERM or SIGINT)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def until_stopped(
    *tasks: asyncio.Task[Any] | None, signalled: asyncio.Task[None] | None = None
) -> None:
    """Returns on SIGTERM or SIGINT (``signalled``, when the service listens from its start);
    raises if one of the service's own tasks ends first, since a service whose state stopped
    changing must not go on answering as if it were current."""
    watched = {t for t in tasks if t is not None}
    if signalled is None:
        signalled = asyncio.create_task(until_signalled())
    done, _ = await asyncio.wait({signalled, *watched}, return_when=asyncio.FIRST_COMPLETED)
    if signalled in done:
        return
    await cancel(signalled)
    for task in done:
        if task.cancelled():
            raise RuntimeError(f"{task.get_name()} was cancelled")
        task.result()  # raises what ended it
        raise RuntimeError(f"{task.get_name()} ended")


def quiet_fenced_futures() -> None:
    """Keeps a fenced producer's orphaned futures out of the error log.

    When Kafka fences a transactional producer, aiokafka fails internal futures that nobody
    awaits, and asyncio logs each one as an error ("Future exception was never retrieved").
    Being fenced is how a coordinator replica or a source task learns it was replaced; the code
    that handles it logs that once, so these add only alarm.
    """
    loop = asyncio.get_running_loop()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), ProducerFenced) and "future" in context:
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


async def _quietly(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    quiet_fenced_futures()
    await main()


def run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Runs a service's async main, logging a crash before the process exits non-zero. The
    process keeps its memory and environment to itself (``secrets.keep_to_self``)."""
    secrets.keep_to_self()
    try:
        asyncio.run(_quietly(main))
    except KeyboardInterrupt:
        pass
    except Exception:
        log.get().exception("service_crashed")
        raise


async def cancel(task: asyncio.Task[object] | None) -> None:
    """Cancels a background task and waits for it to finish.

    An error the task ends with instead is logged, not raised: it was told to stop, and what it
    hit on the way out (a Kafka transaction it was writing, aborted under a producer another
    process fenced) must not replace the reason it was stopped for."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as exc:  # noqa: BLE001 - logged; the caller is already shutting it down
        log.get().warning("background_task_failed_on_cancel", task=task.get_name(), error=repr(exc))


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists, whoever owns it: how a child process notices that
    the parent it serves is gone, even after a SIGKILL that gave it no word."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # there, owned by someone else
    return True


async def watch_parent(pid: int, stop: asyncio.Event, every_s: float) -> None:
    """Sets ``stop`` once process ``pid`` is gone, checking every ``every_s`` until it is set."""
    while not stop.is_set():
        if not alive(pid):
            stop.set()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
