"""The executor's one SparkSession: local mode by default, any Spark master, or Spark Connect.

With a cluster master or a Spark Connect server (``sc://host:port``) the dataset roots must be on a
filesystem the executor process shares with Spark: a batch is committed by renaming its folder
locally. Spark Connect also needs PySpark's ``connect`` extras (``pip install headrace[connect]``).

Delta Lake and the PostgreSQL JDBC driver are jars beside PySpark's (``deploy/spark/lib``, which
``make`` fills from ``deploy/spark/pom.xml``; ``HEADRACE_SPARK_JARS`` names another folder). A
session the executor starts loads them; a Spark Connect server must be started with them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from headrace.core.settings import project_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JARS_VARIABLE = "HEADRACE_SPARK_JARS"

# Delta's SQL and catalog, which a session can only be given when it starts.
DELTA_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

# Settings any session can take at runtime, Spark Connect included.
SQL_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # A silent fallback to row-by-row conversion would hide a schema problem and cost 10-100x.
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    # A batch's Arrow rows go to Spark as record batches, never as a local relation: below this
    # size (48 MiB by default) Spark copies every row into the query plan, which each optimizer
    # rule then walks row by row and each task serializes. A batch of 80,000 rows took 0.3 s of
    # plan work that way, and writing a million rows in such batches ran at half the rate.
    "spark.sql.execution.arrow.localRelationThreshold": "0",
    # INT96 timestamps are a legacy encoding other readers (pyarrow, Trino) handle poorly.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Delta rebuilds a table's state in 50 tasks by default: slow for one small table.
    "spark.databricks.delta.snapshotPartitions": "2",
}

# The driver JVM's memory beyond its heap, bounded. Native memory tracking of the executor's JVM
# writing a million Parquet rows (512 MiB heap, 876 MiB committed): metaspace 121 MiB, G1's own
# structures 59, other native (NIO and Netty buffers) 45, symbols 34, code 26, threads 14. The
# serial collector needs next to nothing of its own and, on a 512 MiB heap and two cores, wrote
# as fast; the others are capped well above what they use, so that growth is an error, not RSS.
JVM_BOUNDS = (
    "-XX:+UseSerialGC",
    "-XX:MaxMetaspaceSize=256m",
    "-XX:ReservedCodeCacheSize=128m",
    "-XX:MaxDirectMemorySize=256m",
)

# Settings only a driver started here can take: a modest heap, since the machine is small and
# back-pressure (see admission.py) bounds what is in flight.
DRIVER_CONF: dict[str, str] = {
    "spark.driver.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # The JVM's logs as JSON lines beside the service's own: from the first line, with Spark's
    # own JSON layout, and after the context starts, with Spark's structured logging.
    "spark.log.structuredLogging.enabled": "true",
    "spark.driver.extraJavaOptions": " ".join(
        (
            "-Dlog4j2.configurationFile=classpath:org/apache/spark/log4j2-json-layout.properties",
            *JVM_BOUNDS,
        )
    ),
}

# Local mode talks only to itself; binding to loopback keeps it off the network.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def is_local(master: str) -> bool:
    """Whether the master runs Spark inside the executor's own driver (``local``, ``local[N]``)."""
    return master == "local" or master.startswith("local[")


def jar_folder() -> Path:
    """Where the jars the executor adds to Spark's are."""
    configured = os.environ.get(JARS_VARIABLE)
    return Path(configured) if configured else project_home() / "deploy" / "spark" / "lib"


def jars(folder: Path) -> list[Path]:
    """The jars to add to Spark's; FileNotFoundError saying how to get them when there are none."""
    found = sorted(folder.glob("*.jar"))
    if not found:
        raise FileNotFoundError(
            f"no jars in {folder} (Delta Lake, the JDBC driver): run `make spark-jars`, or set "
            f"{JARS_VARIABLE} to a folder holding them"
        )
    return found


def session_conf(
    master: str, extra_jars: list[Path] | None = None, warehouse: Path | None = None
) -> dict[str, str]:
    """The Spark settings the executor uses with this master (and these jars and this catalog
    folder, unless the master is a Spark Connect server, which has its own)."""
    if master.startswith("sc://"):
        return dict(SQL_CONF)
    conf = {**SQL_CONF, **DRIVER_CONF, **DELTA_CONF}
    if extra_jars:
        conf["spark.jars"] = ",".join(str(j) for j in extra_jars)
    if warehouse is not None:
        conf["spark.sql.warehouse.dir"] = str(warehouse)
    if is_local(master):
        conf.update(LOCAL_CONF)
    return conf


def create_session(
    master: str, app_name: str = "headrace-executor", warehouse: Path | None = None
) -> SparkSession:
    """Starts (or, for ``sc://`` URLs, connects) the SparkSession, its catalog's folder
    ``warehouse`` (Spark's default is the working directory's ``spark-warehouse``). Blocks until
    it is usable."""
    # Imported here: an executor that never starts Spark never loads PySpark (see ondemand).
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    builder = builder.remote(master) if master.startswith("sc://") else builder.master(master)
    extra = None if master.startswith("sc://") else jars(jar_folder())
    for key, value in session_conf(master, extra, warehouse).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
