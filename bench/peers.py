"""The peers of the Kafka-to-Parquet and Kafka-to-Delta workloads that run in a process of their
own: ``python -m bench.peers quix ...`` and ``python -m bench.peers spark ...``.

Each is a separate process for two reasons: its peak memory is then its own process tree's,
apart from the benchmark's, and nothing of it (a JVM, librdkafka's threads) outlives the phase
that measured it in the benchmark process. The workload (``bench/workloads/parquet.py``) starts,
watches and stops them; this module only does the work, and imports each peer's library only in
the branch that uses it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

READY = b"ready\n"
"""What a peer that waits for its go writes on its stdout once it has started."""


def quix(bootstrap: str, topic: str, group: str, out: Path, interval_s: float, every: int) -> None:
    """Quix Streams' local file sink in Parquet format, reading ``topic`` from the start, until
    stopped with SIGTERM (Quix's own graceful stop: it flushes and commits the last checkpoint).
    The sink writes one file per topic partition and checkpoint, under ``out/<topic>/<p>/``.

    The process starts warm, as headrace's worker is when a connector is created: it imports
    Quix and builds its Application, says :data:`READY` on its stdout, and waits for a line on
    its stdin before it reads the topic; the clock starts with that line."""
    from quixstreams import Application
    from quixstreams.sinks.community.file.formats import ParquetFormat
    from quixstreams.sinks.community.file.local import LocalFileSink

    # The sink refuses a directory with characters outside [a-zA-Z0-9 ._/], which temporary
    # folders have ('-'); a relative path under the working directory avoids them.
    os.chdir(out)
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        commit_interval=interval_s,
        commit_every=every,
        auto_create_topics=False,
        loglevel="WARNING",
    )
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # anything else it prints: to its log
    sys.stdin.readline()
    frame = app.dataframe(app.topic(topic, value_deserializer="json"))
    frame.sink(LocalFileSink(directory="", format=ParquetFormat()))
    app.run()


WARM_UP_ROWS = 10_000


def spark(table_file: Path, out: Path, fmt: str) -> None:
    """Spark writing an Arrow table to Parquet or Delta, as the executor's session does: the
    executor's own settings and jars (``session_conf``: Arrow as record batches, never a local
    relation, Delta's catalog, its driver's heap), and one untimed job first, a write of the
    table's first rows elsewhere, so that the clock meets a warm JVM as headrace's does after its
    warm-up. The session, the table and that job come before the clock; the clock covers
    ``createDataFrame`` and the write. Prints ``{"records", "seconds"}`` as one JSON line, then
    stops the session, and with it the JVM."""
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from headrace.executor.session import jar_folder, jars, session_conf

    master = "local[*]"  # the executor's default (SPARK_MASTER unset)
    builder = SparkSession.builder.master(master).appName("bench-spark-direct")
    conf = session_conf(master, jars(jar_folder()), warehouse=out.parent / "warehouse")
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    try:
        with pa.memory_map(str(table_file)) as source:
            table = pa.ipc.open_file(source).read_all()
        warm_up = table.slice(0, WARM_UP_ROWS)
        session.createDataFrame(warm_up).write.format(fmt).save(str(out.parent / "warm-up"))
        started = time.perf_counter()
        session.createDataFrame(table).write.format(fmt).save(str(out))
        seconds = time.perf_counter() - started
        sys.stdout.write(json.dumps({"records": table.num_rows, "seconds": seconds}) + "\n")
        sys.stdout.flush()
    finally:
        session.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    peers = parser.add_subparsers(dest="peer", required=True)
    q = peers.add_parser("quix", help="Quix Streams' file sink, Parquet format")
    q.add_argument("--bootstrap", required=True)
    q.add_argument("--topic", required=True)
    q.add_argument("--group", required=True)
    q.add_argument("--out", type=Path, required=True)
    q.add_argument("--commit-interval", type=float, required=True, help="seconds")
    q.add_argument("--commit-every", type=int, required=True, help="messages")
    s = peers.add_parser("spark", help="Spark writing an Arrow table to Parquet or Delta")
    s.add_argument("--table", type=Path, required=True, help="an Arrow IPC file")
    s.add_argument("--out", type=Path, required=True, help="a folder that does not exist yet")
    s.add_argument("--format", choices=("parquet", "delta"), default="parquet")
    args = parser.parse_args(argv)
    if args.peer == "quix":
        quix(
            args.bootstrap,
            args.topic,
            args.group,
            args.out,
            args.commit_interval,
            args.commit_every,
        )
    else:
        spark(args.table, args.out, args.format)


if __name__ == "__main__":
    main()
