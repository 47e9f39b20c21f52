"""``headrace plugins list|config|install`` and ``headrace validate``: what is installed (and
installing a Java connector from Maven), what a plugin takes, and whether a config would be
accepted (Connect's validate; nothing is written)."""

from __future__ import annotations

from pathlib import Path

import click
import grpc

from headrace.cli.context import (
    address_option,
    client,
    emit,
    output_option,
    rpc_message,
    settings,
)
from headrace.cli.inputs import config_body, pairs
from headrace.cli.output import installs_table, keys_table, plugins_table, validation_table
from headrace.cli.shapes import config_infos_json, key_json, plugin_json
from headrace.cli.sources import read_one
from headrace.clients.errors import rpc_code
from headrace.core.model.errors import PluginError
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.isolation import jvm
from headrace.isolation.plugins import JVM_PLUGINS, discover, read_manifest


def show_plugins(everything: bool, output: str) -> None:
    """Prints the installed plugins (shared with ``get plugins``)."""
    with client() as c:
        found = [plugin_json(p) for p in c.plugins(connectors_only=not everything)]
    emit(found, output, lambda width: plugins_table(found, width))


@click.group()
def plugins() -> None:
    """The installed plugins and their configuration keys."""


@plugins.command("list")
@click.option("--all", "everything", is_flag=True, help="Also converters, transforms, predicates.")
@output_option()
@address_option
def list_plugins(everything: bool, output: str) -> None:
    """Every installed connector plugin version (Connect's GET /connector-plugins)."""
    show_plugins(everything, output)


@plugins.command("config")
@click.argument("plugin")
@click.option("--version", "version", default="", help="A version installed [default: latest].")
@output_option()
@address_option
def plugin_config(plugin: str, version: str, output: str) -> None:
    """The configuration keys PLUGIN (a class or alias) defines itself.

    -o json prints Connect's GET /connector-plugins/PLUGIN/config."""
    with client() as c:
        keys = [key_json(k) for k in c.plugin_config(plugin, version)]
    emit(keys, output, lambda width: keys_table(keys, width))


@click.command()
@click.argument("plugin")
@click.option(
    "-f",
    "--filename",
    "path",
    metavar="PATH",
    help="A config: Connect's body or a bare config; - for stdin.",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="A key, over the file's.")
@output_option()
@address_option
def validate(plugin: str, path: str | None, sets: tuple[str, ...], output: str) -> None:
    """Check a config as a config of PLUGIN, key by key, writing nothing; exit code 1 when
    any key has an error.

    The table lists the keys with errors; -o json prints Connect's validate answer."""
    name, config, _ = config_body(*read_one(path)) if path else (None, {}, "")
    config = {**config, **({"name": name} if name else {}), **pairs(sets, "--set")}
    with client() as c:
        infos = config_infos_json(c.validate(plugin, config))
    emit(infos, output, lambda width: validation_table(infos, width))
    if infos["error_count"]:
        click.get_current_context().exit(1)


@plugins.command("install")
@click.argument("coordinate")
@click.option(
    "--sha512",
    default=None,
    metavar="HEX",
    help="The SHA-512 the artifact's own jar must have; nothing is installed otherwise.",
)
@click.option(
    "--plugin-path",
    "entry",
    type=click.Path(file_okay=False, path_type=Path),
    help="Install into this folder on this machine only, with no cluster (an image's build, "
    "a shared folder) [default: install for the running cluster].",
)
@address_option
def install(coordinate: str, sha512: str | None, entry: Path | None) -> None:
    """Installs a Java connector from its Maven COORDINATE (group:artifact:version, a release:
    no LATEST, RELEASE or SNAPSHOT), with its dependencies; every file's checksum is checked.

    The running cluster installs it: the config service resolves it and records it in Kafka,
    and every config service and worker, one that joins later too, installs the same jars into
    its own plugin path and uses it without a restart. With no cluster answering, or with
    --plugin-path, it is installed into a folder on this machine, where services reading it
    find it within seconds."""
    if entry is None:
        try:
            with client() as c:
                done = c.install_plugin(coordinate, sha512)
        except grpc.RpcError as exc:
            if rpc_code(exc) != grpc.StatusCode.UNAVAILABLE:
                raise click.ClickException(rpc_message(exc)) from None
            entry = _local_entry()
            click.echo(
                f"no headrace cluster answers ({rpc_message(exc)}): installing in {entry} on "
                "this machine only",
                err=True,
            )
        else:
            click.echo(f"installed {coordinate} for the cluster (SHA-512 {done.sha512[:16]}...)")
            for plugin in done.plugins:
                click.echo(f"  {plugin.type:<16} {plugin.class_name} {plugin.version}")
            return
    _install_here(coordinate, entry, sha512)


@plugins.command("uninstall")
@click.argument("coordinate")
@address_option
def uninstall(coordinate: str) -> None:
    """Uninstalls a Java plugin installed for the cluster from every config service and
    worker; refused while a connector runs or pins a version only it holds."""
    with client() as c:
        c.uninstall_plugin(coordinate)
    click.echo(f"uninstalled {coordinate}")


@plugins.command("installed")
@output_option()
@address_option
def installed_plugins(output: str) -> None:
    """The Java plugins installed for the cluster (GET /admin/plugins)."""
    with client() as c:
        found = [
            {
                "coordinate": i.coordinate,
                "sha512": i.sha512,
                "installed_at_ms": i.at_ms,
                "plugins": [
                    {"class": p.class_name, "type": p.type, "version": p.version} for p in i.plugins
                ],
            }
            for i in c.installed_plugins()
        ]
    emit(found, output, lambda width: installs_table(found, width))


def _local_entry() -> Path:
    configured = [p for p in settings().plugin_path if p != BUILTIN_PLUGINS]
    if not configured:
        raise click.UsageError("give --plugin-path: the plugin path has no folder to install in")
    return configured[0]


def _install_here(coordinate: str, entry: Path, sha512: str | None) -> None:
    """Installs into ``entry`` on this machine, and says what it holds."""
    try:
        folder = jvm.install(coordinate, entry, sha512)
        found = jvm.scan(folder, settings().var_dir / JVM_PLUGINS)
    except PluginError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"installed {coordinate} in {folder}")
    for manifest in found.manifests:
        plugin = read_manifest(manifest)
        click.echo(f"  {plugin.type:<16} {plugin.class_name} {plugin.version}")
    for kind, class_name, version in found.components:
        click.echo(f"  {kind:<16} {class_name} {version}")
    given = settings()
    if entry in given.plugin_path or entry.resolve() in (p.resolve() for p in given.plugin_path):
        catalog = discover(given.plugin_path, given.var_dir / JVM_PLUGINS)
        for alias, taken_by, built_in in catalog.taken_aliases():
            click.echo(
                f"note: {alias} now names {taken_by}, not the built-in {built_in}: give the "
                "built-in's full class name to run it"
            )
