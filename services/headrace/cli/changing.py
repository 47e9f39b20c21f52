"""``headrace apply``, ``create``, ``patch`` and ``delete``: which connectors exist and how they
are configured. Files are Kafka Connect's JSON bodies, so what works with Connect's REST API
works here."""

from __future__ import annotations

from collections.abc import Iterable

import click

from headrace.cli.context import (
    Failures,
    KindGroup,
    address_option,
    client,
    kind_of,
    wait_options,
)
from headrace.cli.inputs import (
    ConnectorSpec,
    InputError,
    config_body,
    connector_specs,
    no_duplicates,
    pairs,
    patch_changes,
)
from headrace.cli.sources import files_of, read_one
from headrace.cli.waiting import GONE, RUNNING, for_connector, wait_or_fail
from headrace.clients.config import ConfigClient
from headrace.core.model.structs import Target

FILES_HELP = "A JSON file, a folder of *.json files, or - for stdin; may repeat."
TARGET_GOAL = "each connector is in its target state (RUNNING unless paused or stopped)"


def _specs(paths: Iterable[str], failures: Failures) -> list[ConnectorSpec]:
    """Every connector the files declare; a file that cannot be read is reported and skipped
    whole, and two declarations of one name stop the command before anything is written."""
    specs: list[ConnectorSpec] = []
    for path in paths:
        with failures.each():
            for file in files_of(path):
                with failures.each():
                    specs.extend(connector_specs(*read_one(file)))
    no_duplicates(specs)
    return specs


def _apply_one(c: ConfigClient, spec: ConnectorSpec) -> tuple[str, str]:
    """What apply did to one connector (created, configured, unchanged), and its target state.
    The stored config is read first, so that a file that has not changed writes nothing."""
    current = c.find(spec.name)
    if current is not None and dict(current.config) == spec.config:
        return "unchanged", current.target_state
    if current is None and spec.initial_state:
        return "created", c.create(spec.name, spec.config, spec.initial_state).target_state
    info, created = c.put_config(spec.name, spec.config)
    return ("created" if created else "configured"), info.target_state


def _wait_for_targets(c: ConfigClient, targets: dict[str, str], timeout: float) -> None:
    wait_or_fail([for_connector(c, n, t or RUNNING) for n, t in targets.items()], timeout)


@click.command()
@click.option(
    "-f", "--filename", "paths", metavar="PATH", multiple=True, required=True, help=FILES_HELP
)
@wait_options(TARGET_GOAL)
@address_option
def apply(paths: tuple[str, ...], wait: bool, timeout: float) -> None:
    """Create or update connectors from Kafka Connect JSON files (kubectl's apply).

    Each file holds {"name": ..., "config": {...}} (Connect's POST /connectors body), a bare
    config with a "name" key (PUT /connectors/NAME/config), or a JSON array of either. Prints
    connector/NAME created, configured or unchanged. A file that is not valid is reported and
    none of it applied; the others are, and the exit code is 1."""
    failures = Failures()
    specs = _specs(paths, failures)
    targets: dict[str, str] = {}
    with client() as c:
        for spec in specs:
            with failures.each(f"connector/{spec.name} ({spec.source})"):
                outcome, targets[spec.name] = _apply_one(c, spec)
                click.echo(f"connector/{spec.name} {outcome}")
        if wait and targets:
            _wait_for_targets(c, targets, timeout)
    failures.exit_if_any()


def _named(resource: tuple[str, ...]) -> str | None:
    """The NAME of ``create connector NAME`` (or ``connector/NAME``); None for none."""
    words = [w for part in resource for w in part.split("/", 1)]
    if not words:
        return None
    if len(words) != 2 or kind_of(words[0]) != "connector" or not words[1].strip():
        raise InputError(f"expected connector NAME (or connector/NAME), got {' '.join(resource)}")
    return words[1].strip()


def _named_spec(name: str, paths: tuple[str, ...], sets: tuple[str, ...]) -> ConnectorSpec:
    """``create connector NAME``: the config from one -f file, then each --set over it."""
    if len(paths) > 1:
        raise InputError("create connector NAME takes one -f file")
    given, config, initial = config_body(*read_one(paths[0])) if paths else (None, {}, "")
    if given is not None and given != name:
        raise InputError(f"{paths[0]}: declares connector {given!r}, not {name!r}")
    config = {**config, **pairs(sets, "--set"), "name": name}
    return ConnectorSpec(name, config, paths[0] if paths else "--set", initial)


@click.command()
@click.argument("resource", nargs=-1, metavar="[connector NAME]")
@click.option("-f", "--filename", "paths", metavar="PATH", multiple=True, help=FILES_HELP)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="A config key; may repeat.")
@click.option(
    "--initial-state",
    type=click.Choice([t.value for t in Target], case_sensitive=False),
    help="RUNNING (the default), PAUSED or STOPPED, as Connect's initial_state.",
)
@wait_options(TARGET_GOAL)
@address_option
def create(
    resource: tuple[str, ...],
    paths: tuple[str, ...],
    sets: tuple[str, ...],
    initial_state: str | None,
    wait: bool,
    timeout: float,
) -> None:
    """Create connectors from files (-f, as apply reads them), or the one named with its config
    given by --set and an optional -f file. A name that exists is refused (apply updates)."""
    name = _named(resource)
    if name is None and sets:
        raise InputError("--set needs a connector: create connector NAME --set KEY=VALUE")
    if name is None and not paths:
        raise InputError("nothing to create: give -f FILE, or connector NAME --set KEY=VALUE")
    failures = Failures()
    specs = [_named_spec(name, paths, sets)] if name else _specs(paths, failures)
    targets: dict[str, str] = {}
    with client() as c:
        for spec in specs:
            with failures.each(f"connector/{spec.name}"):
                state = (initial_state or spec.initial_state).upper()
                targets[spec.name] = c.create(spec.name, spec.config, state).target_state
                click.echo(f"connector/{spec.name} created")
        if wait and targets:
            _wait_for_targets(c, targets, timeout)
    failures.exit_if_any()


@click.group(cls=KindGroup)
def patch() -> None:
    """Change some keys of a connector's config (Connect's PATCH .../config)."""


@patch.command("connector")
@click.argument("name")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Sets a key; may repeat.")
@click.option("--unset", "unsets", multiple=True, metavar="KEY", help="Removes a key; may repeat.")
@click.option(
    "-p", "--patch", "merge_patch", metavar="JSON", help='A merge patch: {"k": "v", "x": null}.'
)
@address_option
def patch_connector(
    name: str, sets: tuple[str, ...], unsets: tuple[str, ...], merge_patch: str | None
) -> None:
    """Set and remove keys of connector NAME's config; the other keys are kept."""
    changes = patch_changes(sets, unsets, merge_patch)
    with client() as c:
        before = dict(c.get(name).config)
        after = dict(c.patch(name, changes).config)
    click.echo(f"connector/{name} patched" + (" (no change)" if before == after else ""))


@click.group(cls=KindGroup)
def delete() -> None:
    """Delete connectors: their connector and tasks stop with deleted=True."""


@delete.command("connector")
@click.argument("names", nargs=-1, required=True)
@wait_options("each connector is gone")
@address_option
def delete_connector(names: tuple[str, ...], wait: bool, timeout: float) -> None:
    """Delete the connectors NAMES."""
    failures = Failures()
    deleted = []
    with client() as c:
        for name in names:
            with failures.each(f"connector/{name}"):
                c.delete(name)
                deleted.append(name)
                click.echo(f"connector/{name} deleted")
        if wait and deleted:
            wait_or_fail([for_connector(c, n, GONE) for n in deleted], timeout)
    failures.exit_if_any()
