"""One nemesis run: start the stack and the pipelines, strike for ``duration_s`` while the churn
goes on, heal everything, let the pipelines drain, then read every output back and check it.

The run's folder holds ``history.jsonl`` (every operation and fault), ``report.json`` (each
pipeline's figures and every violation), the services' logs and the outputs themselves.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from headrace.core.model.offsets import sink_group_id
from headrace.core.storage.topics import ensure_topic
from tests.chaos import checker, nemesis, outputs
from tests.chaos.cluster import Cluster, Deaths
from tests.chaos.history import History, Repeating
from tests.chaos.workload import (
    EXACTLY_ONCE_SINKS,
    FEED,
    GENERATOR_TASKS,
    LINES,
    ROWS,
    SOURCES,
    TOPICS,
    Api,
    Appender,
    Churn,
    pipelines,
)


def text(value: bytes | None) -> str:
    """A line as the file source wrote it, whichever converter framed it."""
    try:
        decoded = json.loads(value) if value else None
    except json.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict):
        decoded = decoded.get("payload")
    return decoded if isinstance(decoded, str) else (value or b"").decode()


SIGNALS = {"kill": signal.SIGKILL, "term": signal.SIGTERM}
HANGING_REMEDY = "find-hanging"  # in the error of a task whose offsets a hanging transaction holds
DRAIN_S = 300.0  # how long the sinks get to catch up once every fault is healed
SETTLE_S = 120.0
READ_ATTEMPTS = 5
WRITES_CONFIG = frozenset({"create", "reconfigure"})


def wait(what: str, check: Callable[[], Any], timeout: float, every_s: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every_s)


class Nemesis:
    """Applies a plan's faults at their times, each healed after its hold in a thread of its
    own, so faults overlap. A target hit again while a fault holds it is healed once the last
    of them ends."""

    def __init__(self, cluster: Cluster, history: History, faults: list[nemesis.Fault]) -> None:
        self._cluster = cluster
        self._history = history
        self._faults = faults
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._heals: list[threading.Thread] = []
        self._holding: dict[str, int] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        self._began = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        """Stops striking, and waits for every fault in its hold to be healed."""
        self._stopping.set()
        self._thread.join()
        for heal in self._heals:
            heal.join()

    def _run(self) -> None:
        for fault in self._faults:
            if self._stopping.wait(max(0.0, self._began + fault.at_s - time.monotonic())):
                return
            try:
                self._strike(fault)
            except Exception as error:  # noqa: BLE001 - a fault that could not be made is noted
                self._history.write("fault", **fault.describe(), outcome=f"not made: {error}")

    def _strike(self, fault: nemesis.Fault) -> None:
        cluster = self._cluster
        target = fault.target
        heal: Callable[[], None]
        if fault.kind in ("slow", "refuse"):
            proxy = cluster.proxies[target]
            if fault.kind == "slow":
                delay_ms = random.Random(fault.seed).uniform(50, 500)
                proxy.slow(delay_ms)
                self._history.write("fault", **fault.describe(), delay_ms=round(delay_ms))
            else:
                proxy.refuse()
                self._history.write("fault", **fault.describe())
            heal = proxy.heal
        elif target == nemesis.PLUGIN:
            pid = nemesis.pick(fault, cluster.plugin_processes())
            if pid is None:
                self._history.write("fault", **fault.describe(), outcome="no plugin process")
                return
            target = f"pid-{pid}"
            if fault.kind == "freeze":
                cluster.send(pid, signal.SIGSTOP)
                heal = partial(cluster.send, pid, signal.SIGCONT)
            else:
                cluster.send(pid, SIGNALS[fault.kind])
                heal = lambda: None  # noqa: E731 - its worker starts another
            self._history.write("fault", **fault.describe(), pid=pid)
        elif fault.kind == "freeze":
            pid = cluster.pid(target)
            if pid is None:
                self._history.write("fault", **fault.describe(), outcome="not running")
                return
            cluster.send(pid, signal.SIGSTOP)
            self._history.write("fault", **fault.describe(), pid=pid)
            heal = partial(cluster.send, pid, signal.SIGCONT)
        else:
            pid = cluster.kill(target, SIGNALS[fault.kind])
            self._history.write(
                "fault", **fault.describe(), pid=pid, outcome=None if pid else "not running"
            )
            heal = partial(cluster.restart, target)
        self._hold(fault, target, heal)

    def _hold(self, fault: nemesis.Fault, target: str, heal: Callable[[], None]) -> None:
        with self._lock:
            self._holding[target] = self._holding.get(target, 0) + 1
            lock = self._locks.setdefault(target, threading.Lock())

        def healed() -> None:
            time.sleep(fault.hold_s)
            with self._lock:
                self._holding[target] -= 1
                last = self._holding[target] == 0
            if not last:
                return
            with lock:
                try:
                    heal()
                    self._history.write("heal", fault=fault.number, target=target)
                except Exception as error:  # noqa: BLE001 - the final heal tries again
                    self._history.write(
                        "heal", fault=fault.number, target=target, outcome=f"failed: {error}"
                    )

        thread = threading.Thread(target=healed, name=f"heal-{fault.number}", daemon=True)
        self._heals.append(thread)
        thread.start()


def connectors_running(api: Api, names: list[str]) -> bool:
    for name in names:
        status = api.read(f"/connectors/{name}/status")
        if status is None or status["connector"]["state"] != "RUNNING":
            return False
        if not status["tasks"] or any(t["state"] != "RUNNING" for t in status["tasks"]):
            return False
    return True


def paused(api: Api, name: str) -> bool:
    status = api.read(f"/connectors/{name}/status")
    return status is not None and all(
        u["state"] == "PAUSED" for u in [status["connector"], *status["tasks"]]
    )


class ChaosRun:
    def __init__(self, folder: Path, seed: int, duration_s: float) -> None:
        self.folder = folder
        self.seed = seed
        self.duration_s = duration_s
        self.history = History(folder / "history.jsonl")
        self.cluster = Cluster(folder)

    def main(self) -> int:
        self.history.write("note", what="run", seed=self.seed, duration_s=self.duration_s)
        deaths = Deaths(self.cluster, self.history)
        try:
            self.cluster.start()
            deaths.start()
            report = self._run(deaths)
        finally:
            deaths.stop()
            self.cluster.stop()
        (self.folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        self._print(report)
        return 1 if report["violations"] else 0

    @property
    def kafka(self) -> str:
        return self.cluster.stack.settings.bootstrap_servers

    def _run(self, deaths: Deaths) -> dict[str, Any]:
        cluster = self.cluster
        for name, partitions in TOPICS.items():
            asyncio.run(ensure_topic(self.kafka, name, partitions))
        api = Api(cluster.stack.settings.rest_addr, self.history)
        made = pipelines(cluster.outputs, cluster.postgres)
        for name, config in made.items():
            path = f"/connectors/{name}/config"
            wait(
                f"{name} created",
                partial(api.call, "create", "PUT", path, config, connector=name),
                60,
            )
        wait("every pipeline running", lambda: connectors_running(api, list(made)), SETTLE_S)
        appender = Appender(cluster.outputs / "lines.txt", self.history)
        churn = Churn(api, cluster.outputs, random.Random(self.seed ^ 0xC1))
        pace = random.Random(self.seed ^ 0xC2)
        loop = Repeating("churn", churn.step, lambda: pace.uniform(1.5, 5.0))
        strikes = Nemesis(cluster, self.history, nemesis.plan(self.seed, self.duration_s))
        appender.start()
        loop.start()
        strikes.start()
        time.sleep(self.duration_s)
        strikes.stop()
        loop.stop()
        appender.stop()
        self._heal(api)
        self._drain(api, churn)
        return self._check(deaths, appender.written)

    def _heal(self, api: Api) -> None:
        """Every process up and every link clean, as an operator would leave it: frozen ones
        thawed, ended ones started, failed units restarted."""
        cluster = self.cluster
        cluster.thaw_all()
        for proxy in cluster.proxies.values():
            proxy.heal()
        if cluster.pid("broker") is None:
            cluster.restart("broker")
        for name in cluster.services():
            if cluster.pid(name) is None:
                cluster.restart(name)
        self.history.write("heal", target="everything")

    def _restart_failed(self, api: Api, names: list[str]) -> None:
        for name in names:
            status = api.read(f"/connectors/{name}/status")
            units = [] if status is None else [status["connector"], *status["tasks"]]
            failed = [u for u in units if u["state"] == "FAILED"]
            if any(HANGING_REMEDY in u.get("trace", "") for u in failed):
                self._abort_hanging()
            if failed:
                api.call(
                    "restart",
                    "POST",
                    f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true",
                    connector=name,
                )

    def _abort_hanging(self) -> None:
        """Follows the remedy a source task names when a transaction Kafka left hanging holds
        its offsets back (a broker stopped in the middle of a commit can leave one): aborts it
        with Kafka's tool, and notes it in the history. The task is restarted after."""
        try:
            aborted = self.cluster.abort_hanging(self.cluster.stack.settings.topic("offsets"))
        except RuntimeError as error:  # the broker still starting, say: the next look tries again
            self.history.write("note", what=f"looking for hanging transactions: {error}")
            return
        for transaction in aborted:
            self.history.write("heal", target="hanging-transaction", **asdict(transaction))

    def _drain(self, api: Api, churn: Churn) -> None:
        """The churn's connectors deleted, the sources paused, and the sinks given time to take
        everything the sources committed."""
        names = list(pipelines(self.cluster.outputs, self.cluster.postgres))

        def churn_left() -> list[str]:
            listed = api.read("/connectors")
            return [n for n in (listed or ["?"]) if n.startswith("churn-") or n == "?"]

        def churn_gone() -> bool:
            for name in churn_left():
                if name != "?":
                    churn.delete(name)
            return not churn_left()

        wait("the churn's connectors deleted", churn_gone, SETTLE_S, every_s=2.0)
        appended = set(outputs.lines(self.cluster.outputs / "lines.txt"))

        def lines_read() -> bool:
            self._restart_failed(api, ["lines"])
            return appended <= {text(v) for _, _, v in outputs.topic(self.kafka, LINES)}

        try:
            wait("the file source caught up", lines_read, DRAIN_S, every_s=5.0)
        except TimeoutError as error:
            self.history.write("note", what=str(error))

        def pause(name: str) -> bool:
            self._restart_failed(api, [name])
            asked = api.call("pause", "PUT", f"/connectors/{name}/pause", connector=name)
            return asked is not None and paused(api, name)

        for source in SOURCES:
            wait(f"{source} paused", partial(pause, source), SETTLE_S, every_s=2.0)

        def drained() -> bool:
            self._restart_failed(api, names)
            return not [v for v in self._read_back()[1] if v.kind == "missing"]

        try:
            wait("every sink caught up", drained, DRAIN_S, every_s=5.0)
        except TimeoutError as error:
            self.history.write("note", what=str(error))
            self._note_sink_groups()
        # A deletion stop still in flight, and a last put, land before anything is read.
        sizes: list[int] = []

        def quiet() -> bool:
            sizes.append(self._recorded_bytes())
            return len(sizes) >= 3 and sizes[-1] == sizes[-3]  # unchanged for two looks

        wait("the recording plugin's logs quiet", quiet, SETTLE_S)

    def _note_sink_groups(self) -> None:
        """Says, for each sink of the rows, where its group's commits stand against the rows:
        committed past every row with rows missing is a loss; short of them, a sink that lags."""
        ends: dict[int, int] = {}
        for partition, offset, _ in outputs.generated(self.kafka, ROWS):
            ends[partition] = max(ends.get(partition, 0), offset + 1)
        for sink in ("delta", "jdbc", "parquet"):
            group = sink_group_id(self.cluster.stack.settings.cluster, sink)
            try:
                commits = outputs.group_commits(self.kafka, group, ROWS)
            except (KafkaError, OSError) as error:  # a note only: the checks still run
                self.history.write("note", what=f"{sink}: commits unknown", error=repr(error))
                continue
            short = {p: end for p, end in ends.items() if commits.get(p, -1) < end}
            where = "commits short of the last rows" if short else "committed past every row"
            self.history.write("note", what=f"{sink}: {where}", committed=commits, rows_end=ends)

    def _recorded_bytes(self) -> int:
        """How much the recording plugin has written, every connector's files together."""
        out = self.cluster.outputs
        return sum(f.stat().st_size for f in [*out.glob("audit/*"), *out.glob("churn/*/*")])

    def _read_back(self) -> tuple[list[checker.Delivery], list[checker.Violation]]:
        """:meth:`_deliveries`, read again when a read fails: a sink may be committing as it is
        read (a Delta commit, say), and what a reader trips on is said in the history."""
        for attempt in range(READ_ATTEMPTS):
            try:
                return self._deliveries()
            except Exception as error:  # read again; the last failure is raised
                self.history.write("note", what="an output could not be read", error=repr(error))
                if attempt == READ_ATTEMPTS - 1:
                    raise
                time.sleep(2.0)
        raise AssertionError("unreachable")

    def _deliveries(self) -> tuple[list[checker.Delivery], list[checker.Violation]]:
        cluster = self.cluster
        feed = outputs.generated(self.kafka, FEED)
        rows = outputs.generated(self.kafka, ROWS)
        row_ids = [i for _, _, i in rows]
        audit, _, _ = outputs.recorded(cluster.outputs / "audit")
        written = outputs.lines(cluster.outputs / "lines.txt")
        results = [
            checker.delivery(
                "audit",
                [(p, o) for p, o, _ in feed],
                [(r["partition"], r["offset"]) for r in audit],
                exactly_once=False,
            ),
            checker.delivery(
                "delta", row_ids, outputs.delta_ids(cluster.outputs / "delta"), exactly_once=True
            ),
            checker.delivery(
                "jdbc", row_ids, outputs.jdbc_ids(cluster.postgres, "chaos_rows"), exactly_once=True
            ),
            checker.delivery(
                "parquet",
                row_ids,
                outputs.parquet_ids(cluster.outputs / "parquet"),
                exactly_once=False,
            ),
            checker.delivery(
                "lines",
                [text(v) for _, _, v in outputs.topic(self.kafka, LINES)],
                outputs.lines(cluster.outputs / "lines-out.txt"),
                exactly_once=False,
            ),
            # The file source: every line written to its file reached its topic.
            checker.delivery(
                "lines-source",
                written,
                [text(v) for _, _, v in outputs.topic(self.kafka, LINES)],
                exactly_once=False,
            ),
        ]
        figures = [d for d, _ in results]
        violations = [v for _, found in results for v in found]
        violations += checker.source_order("feed", feed, GENERATOR_TASKS, exactly_once=True)
        violations += checker.source_order("rows", rows, GENERATOR_TASKS, exactly_once=True)
        for name, ids in (("feed", [i for *_, i in feed]), ("rows", row_ids)):
            twice = len(ids) - len(set(ids))
            if twice:
                violations.append(checker.Violation(name, "duplicated", f"{twice} in the topic"))
        return figures, violations

    def _check(self, deaths: Deaths, appended: int) -> dict[str, Any]:
        figures, violations = self._read_back()
        out = self.cluster.outputs
        audit, audit_life, _ = outputs.recorded(out / "audit")
        violations += checker.sink_order("audit", [(r["partition"], r["offset"]) for r in audit])
        seen = outputs.lines(out / "lines-out.txt")
        firsts = list(dict.fromkeys(seen))
        numbers = [int(line.split("-")[1]) for line in firsts]
        if numbers != sorted(numbers):
            violations.append(checker.Violation("lines", "out of order", "in the file sink's file"))
        lifecycles = {"audit": audit_life}
        puts = {"audit": audit}
        answers: dict[str, outputs.Lines] = {}
        for folder in sorted((out / "churn").glob("churn-*")):
            puts[folder.name], lifecycles[folder.name], answers[folder.name] = outputs.recorded(
                folder
            )
        end_ms = time.time_ns() // 1_000_000
        runs = checker.runs(lifecycles, deaths.gone, end_ms)
        violations += checker.overlaps(runs, puts)
        deleted = [name for name in lifecycles if name.startswith("churn-")]
        history = self.history.entries()
        # A config written with no answer may take effect after a later deletion: a PUT
        # creates the connector again, as a new incarnation.
        unanswered = {
            e["connector"]
            for e in history
            if e["type"] == "op" and e["op"] in WRITES_CONFIG and e["outcome"] == "unknown"
        }
        asked = checker.deletion_asks(history, WRITES_CONFIG)
        stored = checker.stored_task_counts(history)
        violations += checker.deletion_stops(
            lifecycles, answers, deleted, unanswered, asked, stored
        )
        faults = [e for e in history if e["type"] == "fault"]
        return {
            "seed": self.seed,
            "duration_s": self.duration_s,
            "faults": len(faults),
            "faults_by_kind": {
                kind: sum(1 for f in faults if f["kind"] == kind) for kind in nemesis.KINDS
            }
            | {"broker": sum(1 for f in faults if f["target"] == "broker")},
            "operations": sum(1 for e in history if e["type"] == "op"),
            "hanging_aborted": sum(
                1 for e in history if e["type"] == "heal" and e["target"] == "hanging-transaction"
            ),
            "churn_connectors": len(deleted),
            "deletion_stops": sum(
                1
                for life in lifecycles.values()
                for e in life
                if e["event"] == "stop" and e.get("deleted")
            ),
            "unit_runs": len(runs),
            "lines_appended": appended,
            "pipelines": [d.summary() for d in figures],
            "exactly_once": list(EXACTLY_ONCE_SINKS),
            "violations": [asdict(v) for v in violations],
            "history": str(self.folder / "history.jsonl"),
        }

    def _print(self, report: dict[str, Any]) -> None:
        print(
            f"seed {report['seed']}, {report['duration_s']:.0f} s, {report['faults']} faults "
            f"{report['faults_by_kind']}, {report['operations']} operations, "
            f"{report['churn_connectors']} churn connectors, "
            f"{report['deletion_stops']} deletion stops"
            + (
                f", {report['hanging_aborted']} partitions of hanging transactions aborted"
                if report["hanging_aborted"]
                else ""
            )
        )
        for figure in report["pipelines"]:
            print(
                f"  {figure['pipeline']}: {figure['records']} records, "
                f"{figure['missing']} missing, {figure['duplicated']} duplicated"
                + (" (exactly once)" if figure["exactly_once"] else "")
            )
        if report["violations"]:
            print(f"{len(report['violations'])} violations:")
            for violation in report["violations"]:
                print(f"  {violation['pipeline']}: {violation['kind']}: {violation['detail']}")
            print(f"replay: make chaos SEED={report['seed']} DURATION={report['duration_s']:.0f}")
            print(f"history: {report['history']}")
        else:
            print("no violation")
