"""``python -m headrace.standalone worker.properties [connector.properties|connector.json ...]``
(``headrace standalone``): one worker in one process, as Kafka Connect's
``connect-standalone.sh`` runs one, from the same files.

Kafka Connect's REST API is served where the worker file's ``listeners`` say (port 8083 unless
it says otherwise), headrace's gRPC API on ``--address`` (``HEADRACE_CONFIG_ADDR``), and source
offsets are kept in the worker file's ``offset.storage.file.filename``. Paths in connector
configs must be in ``HEADRACE_FILE_ROOTS``; unset, that is the folder the command is run in, and
a relative ``file`` is taken from there, as Connect takes it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import immutables

from headrace.config.console import session
from headrace.core import runner
from headrace.core.model.clientconfig import override_policy
from headrace.core.observability import log
from headrace.core.security.guard import security_or_exit
from headrace.core.settings import Settings, settings_or_exit
from headrace.core.storage.filelog import FileTopic, LogFileError
from headrace.standalone.files import (
    StandaloneConfigError,
    StandaloneWorker,
    read_connector,
    read_worker,
)
from headrace.standalone.process import serve

PROG = "headrace standalone"


def settings_for(worker: StandaloneWorker, address: str) -> Settings:
    """The settings of a standalone worker: the environment's, with what its file says, and
    every part of the control plane at ``address``. ValueError naming what is wrong."""
    overrides: dict[str, Any] = {}
    if not os.environ.get("HEADRACE_FILE_ROOTS"):
        overrides["file_roots"] = (Path.cwd(),)
    if worker.plugin_path:
        base = Settings().plugin_path  # the built-in plugins and the installed, unless set
        overrides["plugin_path"] = (*base, *worker.plugin_path)
    return Settings(
        bootstrap_servers=worker.bootstrap_servers,
        config_addr=address,
        coordinator_addr=address,
        offsets_addr=address,
        worker_config=immutables.Map(worker.worker_config),
        **overrides,
    )


def main() -> None:
    base = settings_or_exit(PROG)
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument("worker", type=Path, help="the worker properties file")
    parser.add_argument(
        "connectors", type=Path, nargs="*", help="connector configs, as properties or JSON"
    )
    parser.add_argument(
        "--address", default=base.config_addr, help="host:port to serve headrace's gRPC API on"
    )
    args = parser.parse_args()
    try:
        worker = read_worker(args.worker)
        settings = settings_for(worker, args.address)
        connectors = [(str(path), read_connector(path)) for path in args.connectors]
        override_policy(settings.client_override_policy)
        FileTopic("offsets", worker.offsets_file)  # a torn or foreign file stops the start
    except (StandaloneConfigError, LogFileError, ValueError) as exc:
        parser.exit(2, f"{PROG}: error: {exc}\n")
    # Every part reads its settings as the distributed services do, from the environment (the
    # config part's checks among them): it holds this worker's, as its plugin processes' does.
    os.environ.update(settings.to_env())
    security = security_or_exit(parser, settings)
    rest_address = f"{worker.rest_host}:{worker.rest_port}"
    refused = session.open_refusal(
        rest_address, security.policy is not None, settings.rest_open == "true"
    )
    if refused is not None:
        parser.exit(2, f"{PROG}: error: {args.worker}: listeners: {refused}\n")
    log.configure("standalone")
    for entry in worker.plugin_path:
        if not entry.exists():  # as Connect: said, and the rest of the plugin path is used
            log.get().warning("plugin_path_entry_missing", entry=str(entry), file=str(args.worker))
    runner.run(
        lambda: serve(
            settings,
            worker.offsets_file,
            worker.offset_flush_interval_ms / 1000,
            connectors,
            rest_address,
            security,
        )
    )


if __name__ == "__main__":
    main()
