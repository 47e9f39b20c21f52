"""A plugin process's socket, wherever its worker's run folder is: a Unix socket's path holds
about a hundred bytes, and a deep folder must not keep a plugin from starting."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import grpc
import psutil
import pytest

from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.isolation.plugins import JVM_PLUGINS, installed
from headrace.isolation.supervisor import PluginProcess, Spare
from headrace.v1 import plugin_pb2, plugin_pb2_grpc
from tests.support import eventually, plugin_hosts


@pytest.mark.parametrize("depth", [1, 120], ids=["shallow", "deep"])
async def test_a_plugin_process_serves_however_deep_its_run_folder(
    tmp_path: Path, depth: int
) -> None:
    run_dir, log_dir = tmp_path / ("r" * depth), tmp_path / "log"
    log_dir.mkdir()
    settings = Settings(var_dir=tmp_path / "var", plugin_path=(BUILTIN_PLUGINS,))
    catalog = installed(settings.plugin_path, settings.var_dir / JVM_PLUGINS)
    process = PluginProcess(
        catalog.resolve("DatagenSource"),
        settings,
        "worker-with-a-long-name-" + "w" * 20,
        run_dir,
        log_dir,
        lambda process, event: None,
        lambda process, code, overrun: None,
    )
    await process.start()
    try:
        assert process.client is not None
        infos = await process.client.validate({}, definition_only=True, deadline_s=30)
        assert "topic" in {info.definition.name for info in infos.configs}
    finally:
        await process.stop()


def sink_process(settings: Settings, run_dir: Path, log_dir: Path) -> PluginProcess:
    catalog = installed(settings.plugin_path, settings.var_dir / JVM_PLUGINS)
    return PluginProcess(
        catalog.resolve("FileStreamSink"),
        settings,
        "w1",
        run_dir,
        log_dir,
        lambda process, event: None,
        lambda process, code, overrun: None,
    )


async def test_a_spare_serves_the_plugin_it_is_claimed_for_and_is_not_held_after(
    tmp_path: Path,
) -> None:
    settings = Settings(var_dir=tmp_path / "var", plugin_path=(BUILTIN_PLUGINS,))
    spare = Spare(settings, "w1", tmp_path / "log")
    await spare.keep()
    [waiting] = [c for c in plugin_hosts() if "--spare" in c.cmdline()]
    process = sink_process(settings, tmp_path / "run", tmp_path / "log")
    await process.start(spare=spare)
    try:
        assert process.client is not None
        infos = await process.client.validate({}, definition_only=True, deadline_s=30)
        assert "file" in {info.definition.name for info in infos.configs}
        # Claimed, it shows the command line of a host started for its plugin.
        [host] = plugin_hosts()
        assert host.pid == waiting.pid
        command = host.cmdline()
        assert command[command.index("--manifest") + 1] == str(process.plugin.manifest)
        assert "--spare" not in command
        # What it writes once claimed goes to the plugin's log, not the spare's.
        assert '"plugin_host_ready"' in process.log_file.read_text()
        assert await spare.claim(["--manifest", "x", "--socket", "y"], tmp_path / "z", "k") is None
    finally:
        await process.stop()
        await spare.stop()


async def test_a_spare_killed_before_its_claim_gives_way_to_a_fresh_process(
    tmp_path: Path,
) -> None:
    settings = Settings(var_dir=tmp_path / "var", plugin_path=(BUILTIN_PLUGINS,))
    spare = Spare(settings, "w1", tmp_path / "log")
    await spare.keep()
    [killed] = [c for c in plugin_hosts() if "--spare" in c.cmdline()]
    killed.kill()
    # Dead, not reaped: the spare's owner (asyncio's child watcher) reaps its own children, and
    # would see the exit code of one reaped by another as 255.
    await eventually("the spare dead", lambda: killed not in plugin_hosts())
    process = sink_process(settings, tmp_path / "run", tmp_path / "log")
    await process.start(spare=spare)
    try:
        assert process.client is not None
        await process.client.validate({}, definition_only=True, deadline_s=30)
        [fresh] = plugin_hosts()
        assert fresh.pid != killed.pid
    finally:
        await process.stop()
        await spare.stop()


async def test_a_stopped_spare_ends_and_none_is_kept_after() -> None:
    settings = Settings(plugin_path=(BUILTIN_PLUGINS,))
    with tempfile.TemporaryDirectory() as log_dir:
        spare = Spare(settings, "w1", Path(log_dir))
        await spare.keep()
        [held] = [c for c in plugin_hosts() if "--spare" in c.cmdline()]
        await spare.stop()
        assert not held.is_running() or held.status() == psutil.STATUS_ZOMBIE
        await spare.keep()
        assert [c for c in plugin_hosts() if "--spare" in c.cmdline()] == []


async def test_no_spare_is_kept_when_the_settings_say_off(tmp_path: Path) -> None:
    spare = Spare(Settings(plugin_spare="off"), "w1", tmp_path)
    await spare.keep()
    assert [c for c in plugin_hosts() if "--spare" in c.cmdline()] == []
    await spare.stop()


@pytest.mark.parametrize("spare", [False, True], ids=["started", "spare"])
async def test_a_plugin_host_answers_only_its_owner(tmp_path: Path, spare: bool) -> None:
    """Found by the second perimeter review: a plugin could call a sibling plugin process's
    host over its socket, whose path is no secret from processes of the same user, and stop its
    units or read its answers. A host answers only calls with the key its owner gave it."""
    settings = Settings(var_dir=tmp_path / "var", plugin_path=(BUILTIN_PLUGINS,))
    process = sink_process(settings, tmp_path / "run", tmp_path)
    kept = Spare(settings, "w1", tmp_path) if spare else None
    if kept is not None:
        await kept.keep()
    await process.start(spare=kept)
    try:
        assert process.client is not None  # its owner's calls carry the key, streams too
        await process.client.validate({}, definition_only=True, deadline_s=30)
        owners = process.client.watch(lambda _: None)
        with pytest.raises(TimeoutError):  # open, with nothing to say yet: not refused
            await asyncio.wait_for(anext(owners), 1.0)
        [socket] = [p for p in (tmp_path / "run").rglob("host.sock")]
        async with grpc.aio.insecure_channel(f"unix:{socket}") as sibling:
            stub = plugin_pb2_grpc.PluginHostStub(sibling)
            for call in (
                stub.Describe(plugin_pb2.DescribeRequest(), timeout=30),
                stub.StopTask(plugin_pb2.StopRequest(connector="c", task=0), timeout=30),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call
                assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                async for _ in stub.Watch(plugin_pb2.WatchRequest(), timeout=30):
                    pass
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        await process.stop()
        if kept is not None:
            await kept.stop()
