"""``headrace coordinator history``: the group's last generations, from the assignments topic,
as JSON."""

from __future__ import annotations

import json

import click

from headrace.core.settings import Settings


@click.command()
@click.argument("action", type=click.Choice(["history"]))
@click.option("--last", "-n", type=int, default=10, show_default=True, help="How many generations.")
def coordinator(action: str, last: int) -> None:
    """The group's history, from the assignments topic, as JSON."""
    import asyncio

    from headrace.coordinator.assignmentlog import AssignmentLog
    from headrace.coordinator.history import describe_all
    from headrace.core.storage.topiclog import kafka_logs

    settings = Settings()

    async def read() -> list[object]:
        log = AssignmentLog(kafka_logs(settings, "assignments"))
        await log.start(writer=False, follow=False)
        await log.close()
        return list(describe_all(log.history.latest(last)))

    click.echo(json.dumps(asyncio.run(read()), indent=2))
