"""``headrace kafka``, ``coordinator`` and ``stack``: the system on this machine (what ``make
run``, ``make down`` and ``make kafka-up`` call), and the coordinator's history. Their heavy
imports wait until the command runs, so connector commands start fast."""

from __future__ import annotations

import json

import click

from headrace.core.rpc import split_address
from headrace.core.settings import Settings


@click.command()
@click.argument("action", type=click.Choice(["start", "stop"]))
def kafka(action: str) -> None:
    """The embedded single-node Kafka broker (KRaft), on KAFKA_BOOTSTRAP_SERVERS's port."""
    from headrace.cli.kafka import EmbeddedKafka

    settings = Settings()
    _, port = split_address(settings.bootstrap_servers)
    broker = EmbeddedKafka(settings.var_dir / "kafka", port=port)
    if action == "start":
        broker.start()
        click.echo(f"kafka ready on {broker.bootstrap}")
    else:
        broker.stop()


@click.command()
@click.argument("action", type=click.Choice(["history"]))
@click.option("--last", "-n", type=int, default=10, show_default=True, help="How many generations.")
def coordinator(action: str, last: int) -> None:
    """The group's history, from the assignments topic, as JSON."""
    import asyncio

    from headrace.coordinator.assignmentlog import AssignmentLog
    from headrace.coordinator.history import describe_all
    from headrace.core.topiclog import kafka_logs

    settings = Settings()

    async def read() -> list[object]:
        log = AssignmentLog(kafka_logs(settings, "assignments"))
        await log.start(writer=False, follow=False)
        await log.close()
        return list(describe_all(log.history.latest(last)))

    click.echo(json.dumps(asyncio.run(read()), indent=2))


@click.command()
@click.argument("action", type=click.Choice(["up", "down"]))
@click.option("--demo", is_flag=True, help="Also run the demo pipeline.")
def stack(action: str, demo: bool) -> None:
    """Every service on this machine, as separate processes."""
    from headrace.cli import demo as demo_pipeline

    if action == "up":
        demo_pipeline.up(Settings(), run_demo=demo)
    else:
        demo_pipeline.down(Settings())
