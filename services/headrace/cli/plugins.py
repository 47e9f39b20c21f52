"""``headrace plugins list|config|install`` and ``headrace validate``: what is installed (and
installing a Java connector from Maven), what a plugin takes, and whether a config would be
accepted (Connect's validate; nothing is written)."""

from __future__ import annotations

from pathlib import Path

import click

from headrace.cli.context import address_option, client, emit, output_option
from headrace.cli.inputs import config_body, pairs
from headrace.cli.output import keys_table, plugins_table, validation_table
from headrace.cli.shapes import config_infos_json, key_json, plugin_json
from headrace.cli.sources import read_one
from headrace.core.model.errors import PluginError
from headrace.core.settings import BUILTIN_PLUGINS, Settings
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
    "--plugin-path",
    "entry",
    type=click.Path(file_okay=False, path_type=Path),
    help="The plugin path entry to install into [default: the first of the plugin path that is "
    "not the built-in plugins: <var>/plugins unless HEADRACE_PLUGIN_PATH says otherwise].",
)
@click.option(
    "--sha512",
    default=None,
    metavar="HEX",
    help="The SHA-512 the artifact's own jar must have; nothing is installed otherwise.",
)
def install(coordinate: str, entry: Path | None, sha512: str | None) -> None:
    """Installs a Java connector from its Maven COORDINATE (group:artifact:version, a release:
    no LATEST, RELEASE or SNAPSHOT), with its dependencies, as a plugin version folder; every
    file's checksum is checked. Services see it once restarted, as on Connect."""
    if entry is None:
        configured = [p for p in Settings().plugin_path if p != BUILTIN_PLUGINS]
        if not configured:
            raise click.UsageError(
                "give --plugin-path: the plugin path has no folder to install in"
            )
        entry = configured[0]
    try:
        folder = jvm.install(coordinate, entry, sha512)
        found = jvm.scan(folder, Settings().var_dir / JVM_PLUGINS)
    except PluginError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"installed {coordinate} in {folder}")
    for manifest in found.manifests:
        plugin = read_manifest(manifest)
        click.echo(f"  {plugin.type:<16} {plugin.class_name} {plugin.version}")
    for kind, class_name, version in found.components:
        click.echo(f"  {kind:<16} {class_name} {version}")
    settings = Settings()
    if entry in settings.plugin_path or entry.resolve() in (
        p.resolve() for p in settings.plugin_path
    ):
        catalog = discover(settings.plugin_path, settings.var_dir / JVM_PLUGINS)
        for alias, taken_by, built_in in catalog.taken_aliases():
            click.echo(
                f"note: {alias} now names {taken_by}, not the built-in {built_in}: give the "
                "built-in's full class name to run it"
            )
