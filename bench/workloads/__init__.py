"""The workloads ``make bench`` runs, by name (``make bench W=<name>`` runs one)."""

from __future__ import annotations

from bench.harness import Workload
from bench.workloads.coldstart import ColdStart
from bench.workloads.configapi import ConfigApi
from bench.workloads.console import Console
from bench.workloads.files import FileToFile
from bench.workloads.flood import Flood
from bench.workloads.javafiles import JavaFileToFile
from bench.workloads.parquet import KafkaToDelta, KafkaToParquet
from bench.workloads.rebalance import Rebalance
from bench.workloads.restart import Restart
from bench.workloads.standalone import StandaloneFileToFile

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        FileToFile(),
        JavaFileToFile(),
        StandaloneFileToFile(),
        KafkaToParquet(),
        KafkaToDelta(),
        Flood(),
        Rebalance(),
        Restart(),
        ColdStart(),
        ConfigApi(),
        Console(),
    )
}
