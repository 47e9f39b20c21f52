"""A TCP proxy the stack's clients go through, which the nemesis can slow or cut.

It listens on a loopback port and forwards each connection to its upstream. ``slow(ms)`` delays
every chunk it forwards, both ways; ``refuse()`` cuts every open connection and closes each new
one at once, as a partition would; ``heal()`` passes bytes as they come again. It runs its own
event loop in a thread, so the runner's threads call it plainly.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading

CHUNK = 64 * 1024


class Proxy:
    def __init__(self, name: str, listen_port: int, upstream: tuple[str, int]) -> None:
        self.name = name
        self.listen_port = listen_port
        self.upstream = upstream
        self._delay_s = 0.0
        self._refusing = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.listen_port}"

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def slow(self, delay_ms: float) -> None:
        self._delay_s = delay_ms / 1000

    def refuse(self) -> None:
        self._refusing = True
        self._loop.call_soon_threadsafe(self._cut_all)

    def heal(self) -> None:
        self._delay_s = 0.0
        self._refusing = False

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.listen_port)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._cut_all()

    def _cut_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()  # the upstream is down: the client sees a refusal
            return
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            for end in (writer, up_writer):
                self._writers.discard(end)
                end.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(CHUNK):
                if self._delay_s:
                    await asyncio.sleep(self._delay_s)
                if writer.is_closing():
                    return
                writer.write(chunk)
                await writer.drain()
        writer.transport.abort()
