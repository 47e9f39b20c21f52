"""``python -m headrace.local``: the system on this machine, as ``make run``, ``make down`` and
``make kafka-up`` and ``make connect-up`` call it: ``kafka start|stop``, ``stack up [--demo]|down``
and ``connect start|stop``. Developer
tooling, apart from the user's ``headrace`` command."""

from __future__ import annotations

import click

from headrace.core.rpc import split_address
from headrace.core.settings import Settings


@click.command()
@click.argument("action", type=click.Choice(["start", "stop"]))
def kafka(action: str) -> None:
    """The embedded single-node Kafka broker (KRaft), on KAFKA_BOOTSTRAP_SERVERS's port."""
    from headrace.local.kafka import EmbeddedKafka

    settings = Settings()
    _, port = split_address(settings.bootstrap_servers)
    broker = EmbeddedKafka(settings.var_dir / "kafka", port=port)
    if action == "start":
        broker.start()
        click.echo(f"kafka ready on {broker.bootstrap}")
    else:
        broker.stop()


@click.command()
@click.argument("action", type=click.Choice(["up", "down"]))
@click.option("--demo", is_flag=True, help="Also run the demo pipeline.")
def stack(action: str, demo: bool) -> None:
    """Every service on this machine, as separate processes."""
    from headrace.local import demo as demo_pipeline

    if action == "up":
        demo_pipeline.up(Settings(), run_demo=demo)
    else:
        demo_pipeline.down(Settings())


@click.command()
@click.argument("action", type=click.Choice(["start", "stop"]))
def connect(action: str) -> None:
    """Kafka Connect, one distributed worker on the embedded broker, its REST API on
    127.0.0.1:8093: a cluster to try ``headrace migrate`` against."""
    from headrace.local.connect import LocalConnect

    worker = LocalConnect(Settings().var_dir / "connect")
    if action == "start":
        try:
            worker.start()
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(f"kafka connect ready on {worker.url}")
    else:
        worker.stop()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def local() -> None:
    """Run headrace on this machine: the embedded Kafka broker, and every service as a
    separate process."""


local.add_command(kafka)
local.add_command(stack)
local.add_command(connect)
