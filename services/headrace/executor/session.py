"""The executor's one SparkSession: local mode by default, any Spark master, or Spark Connect.

With a cluster master or a Spark Connect server (``sc://host:port``) the dataset roots must be on a
filesystem the executor process shares with Spark: a batch is committed by renaming its folder
locally. Spark Connect also needs PySpark's ``connect`` extras installed.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

# Settings any session can take at runtime, Spark Connect included.
SQL_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # A silent fallback to row-by-row conversion would hide a schema problem and cost 10-100x.
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    # INT96 timestamps are a legacy encoding other readers (pyarrow, Trino) handle poorly.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}

# Settings only a driver started here can take: a modest heap, since the machine is small and
# back-pressure (see admission.py) bounds what is in flight.
DRIVER_CONF: dict[str, str] = {
    "spark.driver.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

# Local mode talks only to itself; binding to loopback keeps it off the network.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


def is_local(master: str) -> bool:
    """Whether the master runs Spark inside the executor's own driver (``local``, ``local[N]``)."""
    return master == "local" or master.startswith("local[")


def session_conf(master: str) -> dict[str, str]:
    """The Spark settings the executor uses with this master."""
    if master.startswith("sc://"):
        return dict(SQL_CONF)
    conf = {**SQL_CONF, **DRIVER_CONF}
    if is_local(master):
        conf.update(LOCAL_CONF)
    return conf


def create_session(master: str, app_name: str = "headrace-executor") -> SparkSession:
    """Starts (or, for ``sc://`` URLs, connects) the SparkSession. Blocks until it is usable."""
    builder = SparkSession.builder.appName(app_name)
    builder = builder.remote(master) if master.startswith("sc://") else builder.master(master)
    for key, value in session_conf(master).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
