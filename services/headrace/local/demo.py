"""``make run``: the whole system on the embedded defaults, and a demo pipeline through it.

The demo creates a generated-data source writing to the topic ``demo-records`` and a Parquet
sink reading it back out through the Spark executor into ``var/files/demo/parquet`` (under the
first folder of ``HEADRACE_FILE_ROOTS``, the only ones a connector may write in), waits until every
row has landed, and prints the connectors' status and what Parquet holds.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.core.rpc import split_address
from headrace.core.settings import Settings
from headrace.local.kafka import EmbeddedKafka
from headrace.local.stack import Stack

DEMO_RECORDS = 1000


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _embedded_kafka(settings: Settings) -> EmbeddedKafka | None:
    if "KAFKA_BOOTSTRAP_SERVERS" in os.environ:
        return None  # the user's own cluster
    _, port = split_address(settings.bootstrap_servers)
    return EmbeddedKafka(settings.var_dir.resolve() / "kafka", port=port)


def demo_configs(output: Path) -> dict[str, dict[str, str]]:
    return {
        "demo-source": {
            "connector.class": "DatagenSource",
            "tasks.max": "2",
            "topic": "demo-records",
            "records": str(DEMO_RECORDS),
            "batch.size": "100",
        },
        "demo-sink": {
            "connector.class": "headrace_parquet.ParquetSinkConnector",
            "tasks.max": "2",
            "topics": "demo-records",
            "path": str(output),
        },
    }


def read_rows(path: Path) -> ds.Dataset:
    """The Parquet dataset the sink wrote (folders starting with _ or . are not data)."""
    return ds.dataset(path, format="parquet", ignore_prefixes=[".", "_"])


def run_pipeline(settings: Settings, timeout: float = 180.0) -> None:
    output = (settings.file_roots[0] / "demo" / "parquet").resolve()
    with ConfigClient(settings.config_addr, settings) as client:
        existing = set(client.names())
        for name, config in demo_configs(output).items():
            if name in existing:
                _say(f"connector {name} exists already; left as it is")
            else:
                client.create(name, config)
                _say(f"created connector {name}")
        deadline = time.monotonic() + timeout
        rows = 0
        while time.monotonic() < deadline:
            rows = read_rows(output).count_rows() if output.exists() else 0
            if rows >= DEMO_RECORDS:
                break
            time.sleep(0.5)
        for name in demo_configs(output):
            status = status_json(client.status(name))
            tasks = ", ".join(
                f"task {t['id']} {t['state']} on {t['worker_id']}" for t in status["tasks"]
            )
            connector = status["connector"]
            _say(f"{name}: {connector['state']} on {connector['worker_id']}; {tasks}")
    if rows < DEMO_RECORDS:
        raise SystemExit(f"only {rows} of {DEMO_RECORDS} rows reached {output} in {timeout}s")
    table = read_rows(output).to_table().sort_by("id")
    _say(f"{table.num_rows} rows in Parquet under {output}; the first five:")
    for row in (
        table.slice(0, 5)
        .select(["id", "name", "amount", "kafka_partition", "kafka_offset"])
        .to_pylist()
    ):
        _say(f"  {row}")


def up(settings: Settings, run_demo: bool) -> None:
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    broker = _embedded_kafka(settings)
    if broker is not None:
        _say(f"starting Kafka (KRaft, single node) on {broker.bootstrap} ...")
        broker.start()
    stack = Stack(settings)
    for spec in stack.specs():
        _say(f"starting {spec.name} ...")
        stack.start(spec.name)
    _say(f"all services up; logs in {stack.log_dir}, Prometheus metrics at:")
    for spec in stack.specs():
        metrics = stack.metrics_address(spec.name)
        where = f"http://{metrics}/metrics" if metrics else "(none)"
        _say(f"  {spec.name:<14} {where:<40} log {stack.log_file(spec.name)}")
    scheme = "https" if settings.tls_cert else "http"
    _say(f"the console: {scheme}://{settings.rest_addr}/ui/")
    if run_demo:
        run_pipeline(settings)
    _say("the stack keeps running; stop it with `make down`")


def down(settings: Settings) -> None:
    Stack(settings).down()
    broker = _embedded_kafka(settings)
    if broker is not None:
        broker.stop()
    _say("stopped")
