"""Kafka to Parquet: JSON records in a topic written to Parquet by headrace's Parquet sink through
the Spark executor, beside the peers a team would weigh against it, and the peak memory of each.

Each run fills a fresh topic with ``records`` JSON values of the demo's shape (``id``, ``name``,
``amount``) before any clock starts. The topic has two partitions, so that both of the sink's two
tasks have work (a consumer group gives each member whole partitions). Then, one after another on
the same topic:

- **headrace**: a ``ParquetSink`` connector with ``tasks.max=2``. End to end runs from the create
  call to the last row in Parquet; steady state from the first row in Parquet to the
  last, so plugin start-up and Spark's first job stay out of it. The sink flushes a task's buffer
  at 20,000 records or after a second (its defaults), and the executor fsyncs every batch before
  the offsets are committed.
- **Quix Streams** (what a Python team would pick instead): an Application reading the topic from
  the start, in a fresh group, into its local file sink in Parquet format, run as one process
  per partition (two, in one consumer group, as its docs scale an application and as headrace
  runs two tasks) until every row is in its files. It writes on each checkpoint; checkpoints
  come every second or every 20,000 messages, a task's flush, so both systems write files of
  about the same size. Its processes start before the clock, warm as headrace's workers are:
  each has imported Quix and built its Application, and waits for a go; end to end runs from
  the go, as headrace's from the create call; steady state as for headrace. It does not fsync.
- **Spark direct from Arrow** (the ceiling of the Spark leg): a SparkSession with the executor's
  own settings and jars (``session_conf``, ``local[*]``: Arrow record batches, never a local
  relation; its driver's heap), in a process of its own, started before the clock and warmed by
  one untimed write of the table's first 10,000 rows, given the same rows as an Arrow table built
  before the clock; the clock covers ``createDataFrame`` and the write.
- **raw aiokafka + pyarrow** (the ceiling without Spark): ``getmany`` in large chunks, each
  partition's values parsed by pyarrow's JSON reader and written to a Parquet file every 20,000
  records, offsets committed after each file, as headrace's tasks do. It runs in the benchmark
  process, so it has no peak memory of its own to report (the benchmark's would include the
  records it generated and its own bookkeeping).

Peak RSS, in MiB, is sampled during each system's phase only (``bench/memory.py``): headrace's
two workers with their plugin processes, its executor with its JVM, and the three together;
the Quix Streams processes together; the Spark process with its JVM.

Spark Structured Streaming's Kafka source would be the natural peer, but its jar cannot be had
here: it needs ``org.apache.spark:spark-token-provider-kafka-0-10_2.13``, which Maven does not
serve on these machines.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq
from aiokafka import ConsumerRecord, TopicPartition

from bench import raw
from bench.env import BenchEnv
from bench.harness import Measure, watch
from bench.memory import PeakMemory, plugin_processes
from bench.peers import READY
from headrace.core.storage.topics import ensure_topic

DEADLINE_S = 600.0
PARTITIONS = 2
TASKS = 2
# headrace's Parquet sink flushes a task at this many records or this often (its defaults); the
# peers that batch are set to write on the same terms.
FLUSH_RECORDS = 20_000
FLUSH_INTERVAL_S = 1.0
PEER_STOP_S = 30.0  # for a peer to stop on its own once asked, before it is killed
REPO = Path(__file__).resolve().parents[2]  # where `python -m bench.peers` is importable

HEADRACE = ("headrace end to end", "headrace steady state")
QUIX = ("Quix Streams end to end", "Quix Streams steady state")
SPARK = "Spark direct from Arrow"
RAW = "raw aiokafka + pyarrow"
PRODUCE = "raw aiokafka produce (filling the topic)"
WORKERS_RSS = "headrace workers and plugins peak RSS"
EXECUTOR_RSS = "headrace executor peak RSS"
HEADRACE_RSS = "headrace workers, plugins and executor peak RSS"
EVERY_RSS = "headrace, every process peak RSS"
"""With the config service and the coordinator, which Quix and Spark direct have no need of."""
QUIX_RSS = "Quix Streams peak RSS"
SPARK_RSS = "Spark direct peak RSS"


def pss(rss_figure: str) -> str:
    """The proportional-set figure beside a resident-set one (``bench/memory.py``)."""
    return rss_figure.replace(" peak RSS", " peak PSS")


def peaks_of(peaks: PeakMemory, *figures: str) -> dict[str, float]:
    """The peak RSS of each tracked name in ``figures``, and its peak PSS."""
    rss, proportional = peaks.mib(), peaks.pss_mib()
    return {**{f: rss[f] for f in figures}, **{pss(f): proportional[f] for f in figures}}


def payload(i: int) -> raw.Record:
    """The record the demo's datagen makes for id ``i``, as key and value bytes.

    The value is byte for byte what ``json.dumps`` makes of ``{"id": i, "name": f"record-{i}",
    "amount": i * 0.25}`` (a float's repr is its JSON), formatted directly: three times faster,
    which is two seconds of each run at a million records.
    """
    return str(i).encode(), f'{{"id": {i}, "name": "record-{i}", "amount": {i * 0.25!r}}}'.encode()


def json_table(values: Sequence[bytes]) -> pa.Table:
    """JSON values as an Arrow table, by pyarrow's (multi-threaded, C++) JSON reader."""
    return pj.read_json(io.BytesIO(b"\n".join(values)))


class ParquetRows:
    """How many rows the Parquet files under ``root`` hold, from each file's footer.

    Hidden names (``_tmp-*`` batches not yet committed, ``.crc`` files) are skipped. A file counts
    once its footer reads, and is not read again: headrace commits whole folders by renaming
    them, and Quix writes each file once, so a file that reads is complete; one that does not is
    still being written and is tried again at the next count.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._rows: dict[str, int] = {}

    def count(self) -> int:
        # os.walk, not Path.rglob: a temporary folder renamed while it is listed is not an error.
        for folder, dirs, files in os.walk(self._root):
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            for name in files:
                path = os.path.join(folder, name)
                if name.startswith(("_", ".")) or not name.endswith(".parquet"):
                    continue
                if path not in self._rows:
                    try:
                        self._rows[path] = pq.read_metadata(path).num_rows
                    except (OSError, pa.ArrowException):
                        continue
        return sum(self._rows.values())

    async def progress(self) -> int:
        return self.count()


class DeltaRows:
    """How many rows a Delta table under ``root`` holds, from its log: each committed file's
    ``numRecords``, which Delta writes in the add action's stats. The tables here are only ever
    appended to, so no file is removed."""

    def __init__(self, root: Path) -> None:
        self._log = root / "_delta_log"
        self._counted: dict[str, int] = {}

    def count(self) -> int:
        try:
            names = sorted(os.listdir(self._log))
        except FileNotFoundError:
            return 0
        for name in names:
            if not name.endswith(".json") or name in self._counted:
                continue
            rows = 0
            # A commit file appears whole: Delta writes it elsewhere and renames it in.
            for line in (self._log / name).read_text().splitlines():
                add = json.loads(line).get("add")
                if add is not None:
                    rows += int(json.loads(add["stats"])["numRecords"])
            self._counted[name] = rows
        return sum(self._counted.values())

    async def progress(self) -> int:
        return self.count()


@contextlib.contextmanager
def peer(
    args: Sequence[str], log: Path, stdout: int | None = None, stdin: int | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m bench.peers <args>`` in a process group of its own, stopped on the way out."""
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.peers", *args],
            cwd=REPO,
            stdout=errors if stdout is None else stdout,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stderr=errors,
            start_new_session=True,
        )
        try:
            yield process
        finally:
            stop(process)
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the peer (Quix stops gracefully on it), SIGKILL if it has not gone in time;
    then SIGKILL to whatever is left of its process group, such as a JVM whose Python parent is
    gone, which would otherwise outlive the run. The group is the peer's own
    (``start_new_session``), so nothing else is touched."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(PEER_STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    with contextlib.suppress(ProcessLookupError):  # the group is empty: all stopped by itself
        os.killpg(process.pid, signal.SIGKILL)


def _value(record: ConsumerRecord[bytes, bytes]) -> bytes:
    if record.value is None:
        raise ValueError(f"a null value at {record.topic}-{record.partition}@{record.offset}")
    return record.value


def write_part(records: Sequence[ConsumerRecord[bytes, bytes]], out: Path) -> None:
    """One partition's records as one Parquet file, named for its offset range, with the Kafka
    partition and offset of every row (what lets a retry be recognised, as in headrace)."""
    table = json_table([_value(r) for r in records])
    table = table.append_column(
        "kafka_partition", pa.array([r.partition for r in records], pa.int32())
    )
    table = table.append_column("kafka_offset", pa.array([r.offset for r in records], pa.int64()))
    first, last = records[0], records[-1]
    pq.write_table(table, out / f"{first.partition}-{first.offset:020d}-{last.offset:020d}.parquet")


async def raw_to_parquet(bootstrap: str, topic: str, group: str, n: int, out: Path) -> float:
    """The ceiling without Spark; records/s from the consumer's start to the last file."""
    consumer = raw.from_start(bootstrap, topic, group)
    await consumer.start()
    try:
        started = time.perf_counter()
        pending: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = {}
        seen = 0

        async def flush(tp: TopicPartition) -> None:
            records = pending.pop(tp)
            # pyarrow lets go of the GIL: the fetcher keeps fetching on the loop meanwhile.
            await asyncio.to_thread(write_part, records, out)
            await consumer.commit({tp: records[-1].offset + 1})

        while seen < n:
            chunk = await consumer.getmany(timeout_ms=500, max_records=raw.CONSUME_CHUNK)
            for tp, records in chunk.items():
                seen += len(records)
                pending.setdefault(tp, []).extend(records)
                if len(pending[tp]) >= FLUSH_RECORDS:
                    await flush(tp)
        for tp in list(pending):
            await flush(tp)
        return n / (time.perf_counter() - started)
    finally:
        await consumer.stop()


class KafkaToParquet:
    name = "parquet"
    description = "Kafka -> Parquet through the Spark executor (ParquetSink)"
    measures: Mapping[str, Measure] = {
        **{figure: Measure("records/s") for figure in (*HEADRACE, *QUIX, SPARK, RAW, PRODUCE)},
        **{
            size(figure): Measure("MiB", higher_is_better=False)
            for figure in (WORKERS_RSS, EXECUTOR_RSS, HEADRACE_RSS, EVERY_RSS, QUIX_RSS, SPARK_RSS)
            for size in (str, pss)
        },
    }
    max_repeats = 3
    ratios: tuple[tuple[str, str], ...] = (
        (HEADRACE[0], QUIX[0]),
        (HEADRACE[1], QUIX[1]),
        (HEADRACE[0], SPARK),
        (HEADRACE[1], SPARK),
        (HEADRACE[1], RAW),
        (HEADRACE_RSS, QUIX_RSS),
        (pss(HEADRACE_RSS), pss(QUIX_RSS)),
        (EVERY_RSS, QUIX_RSS),
        (pss(EVERY_RSS), pss(QUIX_RSS)),
    )

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"records": 2_000 if smoke else 1_000_000, "partitions": PARTITIONS, "tasks": TASKS}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n = int(str(parameters["records"]))
        topic, table_file, figures = self._prepare(env, n)
        return figures | env.each_system(
            partial(self._headrace, env, topic, n),
            partial(self._raw, env, topic, n),
            partial(self._quix, env, topic, n),
            partial(self._spark, env, table_file, n),
        )

    def _raw(self, env: BenchEnv, topic: str, n: int) -> dict[str, float]:
        out = env.folder("raw")
        rate = asyncio.run(raw_to_parquet(env.bootstrap, topic, env.fresh("group"), n, out))
        _expect(n, ParquetRows(out).count(), RAW)
        return {RAW: rate}

    def _prepare(self, env: BenchEnv, n: int) -> tuple[str, Path, dict[str, float]]:
        """Before any clock: a fresh topic filled with ``n`` records, and the same rows as an
        Arrow file for Spark direct; the topic, the file, and the rate it was filled at."""
        topic = env.fresh("records")
        records = [payload(i) for i in range(n)]
        table_file = env.folder("arrow") / "rows.arrow"
        with pa.OSFile(str(table_file), "wb") as sink:
            table = json_table([value for _, value in records])
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
        del table
        return topic, table_file, {PRODUCE: asyncio.run(self.fill_topic(env, topic, records))}

    async def fill_topic(self, env: BenchEnv, topic: str, records: list[raw.Record]) -> float:
        await ensure_topic(env.bootstrap, topic, PARTITIONS)
        return await raw.produce(env.bootstrap, topic, PARTITIONS, records)

    connector = "ParquetSink"
    format = "parquet"

    def rows_at(self, out: Path) -> ParquetRows | DeltaRows:
        """What counts the rows written at ``out``."""
        return ParquetRows(out)

    def _headrace(self, env: BenchEnv, topic: str, n: int) -> dict[str, float]:
        stack, out, name = env.stack, env.folder("headrace"), env.fresh("sink")
        rows = self.rows_at(out)
        config = {
            "connector.class": self.connector,
            "tasks.max": str(TASKS),
            "topics": topic,
            "path": str(out),
        }
        with env.client() as client, PeakMemory() as peaks:
            own = plugin_processes(f"/plugins/{self.format}/")
            for service in ("worker-1", "worker-2"):
                peaks.track(WORKERS_RSS, stack.pid(service), own)
                peaks.track(HEADRACE_RSS, stack.pid(service), own)
            peaks.track(EXECUTOR_RSS, stack.pid("executor"))
            peaks.track(HEADRACE_RSS, stack.pid("executor"))
            for service in ("worker-1", "worker-2"):
                peaks.track(EVERY_RSS, stack.pid(service), own)
            for service in ("executor", "config", "coordinator"):
                peaks.track(EVERY_RSS, stack.pid(service))
            started = time.perf_counter()
            client.create(name, config)
            try:
                end_to_end, steady = asyncio.run(
                    watch("headrace", rows.progress, n, started, DEADLINE_S)
                )
            finally:
                client.delete(name)
        _expect(n, rows.count(), "headrace")
        return {
            HEADRACE[0]: end_to_end,
            HEADRACE[1]: steady,
            **peaks_of(peaks, WORKERS_RSS, EXECUTOR_RSS, HEADRACE_RSS, EVERY_RSS),
        }

    def _quix(self, env: BenchEnv, topic: str, n: int) -> dict[str, float]:
        """Quix Streams as its docs scale an application: one process per partition, in one
        consumer group, as headrace runs one task per partition."""
        out = env.folder("quix")
        rows, group = ParquetRows(out), env.fresh("quix")
        args = (
            *("quix", "--bootstrap", env.bootstrap, "--topic", topic),
            *("--group", group, "--out", str(out)),
            *("--commit-interval", str(FLUSH_INTERVAL_S)),
            *("--commit-every", str(FLUSH_RECORDS)),
        )
        logs = [out / f"_quix-{i}.log" for i in range(PARTITIONS)]
        processes: list[subprocess.Popen[bytes]] = []

        async def progress() -> int:
            for process, log in zip(processes, logs, strict=True):
                if process.poll() is not None:
                    raise RuntimeError(f"Quix Streams exited with {process.returncode}; see {log}")
            return rows.count()

        with PeakMemory() as peaks, contextlib.ExitStack() as running:
            for log in logs:
                pipes = {"stdout": subprocess.PIPE, "stdin": subprocess.PIPE}
                processes.append(running.enter_context(peer(args, log, **pipes)))
                peaks.track(QUIX_RSS, processes[-1].pid)
            for process, log in zip(processes, logs, strict=True):  # warm, as headrace's are
                assert process.stdout is not None
                if process.stdout.readline() != READY:
                    raise RuntimeError(f"Quix Streams did not start; see {log}")
            started = time.perf_counter()
            for process in processes:
                assert process.stdin is not None
                process.stdin.write(b"go\n")
                process.stdin.flush()
            end_to_end, steady = asyncio.run(
                watch("Quix Streams", progress, n, started, DEADLINE_S)
            )
        _expect(n, rows.count(), "Quix Streams")
        return {QUIX[0]: end_to_end, QUIX[1]: steady, **peaks_of(peaks, QUIX_RSS)}

    def _spark(self, env: BenchEnv, table_file: Path, n: int) -> dict[str, float]:
        folder = env.folder("spark")
        out, log = folder / "rows", folder / "_spark.log"
        with PeakMemory() as peaks:
            args = ("spark", "--table", str(table_file), "--out", str(out), "--format", self.format)
            with peer(args, log, stdout=subprocess.PIPE) as process:
                peaks.track(SPARK_RSS, process.pid)
                answer, _ = process.communicate(timeout=DEADLINE_S)
        if process.returncode != 0:
            raise RuntimeError(f"Spark direct exited with {process.returncode}; see {log}")
        result = json.loads(answer.decode().splitlines()[-1])
        _expect(n, self.rows_at(out).count(), "Spark direct")
        return {SPARK: n / float(result["seconds"]), **peaks_of(peaks, SPARK_RSS)}


def _expect(n: int, rows: int, system: str) -> None:
    """More rows than records would mean duplicates, which would flatter a rate."""
    if rows != n:
        raise RuntimeError(f"{system} wrote {rows} rows for {n} records")


class KafkaToDelta(KafkaToParquet):
    """Kafka to Delta Lake: the same records into a table by headrace's Delta sink (one Delta
    commit per batch, exactly once), beside Spark writing the same rows from Arrow to Delta
    directly, in the same session settings and with the same jars as the executor's."""

    name = "delta"
    description = "Kafka -> Delta Lake through the Spark executor (DeltaSink)"
    measures: Mapping[str, Measure] = {
        **{figure: Measure("records/s") for figure in (*HEADRACE, SPARK, PRODUCE)},
        **{
            size(figure): Measure("MiB", higher_is_better=False)
            for figure in (WORKERS_RSS, EXECUTOR_RSS, HEADRACE_RSS, EVERY_RSS, SPARK_RSS)
            for size in (str, pss)
        },
    }
    ratios: tuple[tuple[str, str], ...] = (
        (HEADRACE[1], SPARK),
        (HEADRACE_RSS, SPARK_RSS),
        (pss(HEADRACE_RSS), pss(SPARK_RSS)),
    )
    connector = "DeltaSink"
    format = "delta"

    def rows_at(self, out: Path) -> ParquetRows | DeltaRows:
        return DeltaRows(out)

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n = int(str(parameters["records"]))
        topic, table_file, figures = self._prepare(env, n)
        return figures | env.each_system(
            partial(self._headrace, env, topic, n), partial(self._spark, env, table_file, n)
        )
