"""What a benchmark run stands on: one broker, one headrace stack, fresh names.

The broker is the embedded one (``KAFKA_BOOTSTRAP_SERVERS`` names another), started once per run
on a free port with a folder of its own. The headrace services start the first time a workload
asks for them, and stay up for the run; their plugin path holds the built-in plugins and Kafka's
connect-file, installed from Maven for the JVM host's workload. Every topic, group and connector
name a workload uses comes from :meth:`BenchEnv.fresh`, so a run against a reused broker never
reads an earlier run's records.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, cast

from headrace.clients.config import ConfigClient
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.isolation import jvm
from headrace.local.kafka import KAFKA_VERSION, EmbeddedKafka, free_port
from headrace.local.stack import Stack

Step = TypeVar("Step")
Peer = TypeVar("Peer")


def abba(turn: int, steps: Sequence[Step]) -> list[Step]:
    """``steps`` in the order of measured run ``turn``: A-B-B-A, given order in runs 0 and 3,
    reversed in runs 1 and 2, and so on by fours, so that no system always runs first (on a
    cooler machine, or right after the broker compacted) nor always last."""
    return list(reversed(steps)) if turn % 4 in (1, 2) else list(steps)


@dataclass
class BenchEnv:
    root: Path
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    bootstrap: str = ""
    turn: int = 0
    """Which measured run this is (the harness sets it): the order systems run in follows it."""
    _kept: dict[str, tuple[object, Callable[[], None]]] = field(default_factory=dict)
    _broker: EmbeddedKafka | None = None
    _stack: Stack | None = None

    def __enter__(self) -> BenchEnv:
        self.bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
        if not self.bootstrap:
            self._broker = EmbeddedKafka(self.root / "kafka", port=free_port(), heap="1g")
            self._broker.start()
            self.bootstrap = self._broker.bootstrap
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_kept()
        if self._stack is not None:
            self._stack.down()
        if self._broker is not None:
            self._broker.stop()

    def each_system(self, *steps: Callable[[], dict[str, float]]) -> dict[str, float]:
        """Runs each system's part of a run, in this run's turn (:func:`abba`); their figures."""
        figures: dict[str, float] = {}
        for step in abba(self.turn, steps):
            figures |= step()
        return figures

    def kept(self, name: str, start: Callable[[], Peer], stop: Callable[[Peer], None]) -> Peer:
        """The peer ``name`` of the workload that runs: started by ``start`` the first time it
        is asked for (in the warm-up), and the same one in every run after, as headrace's
        services are, until the harness stops it with :meth:`stop_kept` once the workload is
        done. A peer that starts anew in each measured run meets the clock cold where headrace
        is warm."""
        if name not in self._kept:
            peer = start()
            self._kept[name] = (peer, lambda: stop(peer))
        found, _ = self._kept[name]
        return cast(Peer, found)

    def stop_kept(self) -> None:
        """Stops every peer :meth:`kept` started, the last started first."""
        while self._kept:
            _, (_, stop) = self._kept.popitem()
            stop()

    def fresh(self, name: str) -> str:
        """A topic, group or connector name no earlier run has used."""
        return f"bench-{self.run_id}-{name}-{uuid.uuid4().hex[:6]}"

    def folder(self, name: str) -> Path:
        path = self.root / self.fresh(name)
        path.mkdir(parents=True)
        return path

    @property
    def stack(self) -> Stack:
        """The headrace services (executor, config service, coordinator, two workers), started
        on first use."""
        if self._stack is None:
            settings = Settings(
                plugin_path=(BUILTIN_PLUGINS, self.java_plugins()),
                bootstrap_servers=self.bootstrap,
                cluster=f"bench{self.run_id}",
                config_addr=f"127.0.0.1:{free_port()}",
                rest_addr=f"127.0.0.1:{free_port()}",
                coordinator_addr=f"127.0.0.1:{free_port()}",
                executor_addr=f"127.0.0.1:{free_port()}",
                var_dir=self.root / "var",
                # Every workload's folder (see ``folder``) is one a connector may write in.
                file_roots=(self.root,),
            )
            # No grace period: a lost worker's work moves once its session is over, as it does
            # in the Kafka Connect group it is measured against (rebalance sets the same).
            self._stack = Stack(settings, extra_args={"coordinator": ("--grace-period", "0")})
            self._stack.up()
        return self._stack

    def java_plugins(self) -> Path:
        """A plugin path entry with Kafka's connect-file at the broker's version, installed as a
        user installs it (``headrace plugins install``), for the JVM host's workload."""
        entry = self.root / "java-plugins"
        if not (entry / "connect-file").exists():
            jvm.install(f"org.apache.kafka:connect-file:{KAFKA_VERSION}", entry)
        return entry

    def client(self) -> ConfigClient:
        return ConfigClient(self.stack.settings.config_addr, self.stack.settings)
