"""The layout's boundaries, read from the code's own imports (lazy ones inside functions too).

- A service (the config service, the coordinator, the worker, the executor, the ``headrace``
  command) imports only the shared packages (``core``, ``components``, ``isolation``,
  ``migration``, ``clients``, ``sdk``, ``v1``) and itself: never another service, never ``runtime``
  (which lives inside plugin processes). Standalone mode is the one composition of services:
  it runs the config service's, the coordinator's and the worker's own parts in one process,
  and imports those three too.
- ``runtime`` imports only the shared packages; the shared packages import no service and no
  ``runtime``, ``core`` neither ``components`` nor ``isolation``, ``isolation`` no
  ``components`` and ``components`` no ``isolation`` (the plugin vocabulary both speak is
  ``core.model.plugins``), ``migration`` (a move from Kafka Connect, which the command and the
  config service both drive) only ``core`` and ``clients``, ``clients`` (headrace's own services
  and Connect's REST API as clients ask them) only ``core``, ``sdk`` and ``v1``; the SDK imports
  only itself.
- Only the wire converters (headrace's types to and from the protobuf of its topics and of a
  process boundary), the clients and the servicers import the generated ``v1``: every module
  outside ``clients`` that does is named below with its part, so a new one is a choice made
  in view.
- ``Settings`` is built only where a process starts (a ``__main__``, the ``headrace`` command's
  context, developer tooling) and passed down from there.
- Plugins, built in or not, import only ``headrace.sdk``.
- Developer tooling (``local``) is imported by nothing in the package.
- No folder holds more than a fifth of the package's lines, and none is flatter than about
  fifteen modules.
- No class holds more than 350 lines or 30 methods: one that would is split into its parts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "services" / "headrace"
SHARED = {"core", "components", "isolation", "migration", "clients", "sdk", "v1"}
SERVICES = {"config", "coordinator", "worker", "executor", "cli"}
CONTROL_PLANE = {"config", "coordinator", "worker"}
ALLOWED = {
    **{service: SHARED | {service} for service in SERVICES},
    "standalone": SHARED | CONTROL_PLANE | {"standalone"},
    "runtime": SHARED | {"runtime"},
    "core": {"core", "sdk", "v1"},
    "components": {"components", "core", "sdk", "v1"},
    "isolation": {"isolation", "clients", "core", "sdk", "v1"},
    "migration": {"migration", "clients", "core", "sdk", "v1"},
    "clients": {"clients", "core", "sdk", "v1"},
    "sdk": {"sdk"},
    "v1": {"v1"},
}
WIRE, CLIENT, SERVICER = "wire converter", "client", "servicer"
SPEAKS_V1 = {
    "config/automation.py": WIRE,  # the command topic's records
    "config/grpc_api.py": SERVICER,
    "config/service.py": SERVICER,
    "coordinator/__main__.py": SERVICER,
    "coordinator/assignmentlog.py": WIRE,
    "coordinator/group.py": SERVICER,  # the Join streams' outbox
    "coordinator/service.py": SERVICER,
    "core/model/configlog.py": WIRE,
    "core/model/status.py": WIRE,
    "core/model/wire.py": WIRE,
    "core/storage/remotelog.py": CLIENT,  # standalone's offsets, from a plugin process
    "core/storage/told.py": WIRE,
    "executor/__main__.py": SERVICER,
    "executor/ondemand.py": SERVICER,
    "executor/server.py": SERVICER,
    "executor/service.py": SERVICER,
    "migration/api.py": SERVICER,
    "runtime/host/__main__.py": SERVICER,
    "runtime/host/java.py": WIRE,  # records to and from the JVM host's messages
    "runtime/host/jvm.py": CLIENT,  # the JVM host, from its Python side
    "runtime/host/service.py": SERVICER,
    "standalone/offsetlog.py": SERVICER,
    "standalone/process.py": SERVICER,
    "worker/membership.py": CLIENT,  # the Join stream, with the fencing it times
}
PLUGIN_FOLDERS = (PACKAGE / "plugins", ROOT / "tests" / "plugins", ROOT / "docs" / "example")
MOST_MODULES = 16
LARGEST_SHARE = 0.20


def modules(folder: Path) -> Iterator[Path]:
    yield from (p for p in sorted(folder.rglob("*.py")) if "__pycache__" not in p.parts)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every ``headrace`` import in a file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            yield from ((node.lineno, n) for n in names[:1] if n.split(".")[0] == "headrace")
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.startswith("headrace"))


def area(module: str) -> str:
    """The top-level package of ``headrace`` a module belongs to (``""`` for ``headrace``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_modules() -> Iterator[tuple[str, Path]]:
    for path in modules(PACKAGE):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] != "plugins" and len(relative.parts) > 1:
            yield relative.parts[0], path


def test_each_package_imports_only_what_its_place_allows() -> None:
    crossings = [
        f"{path.relative_to(ROOT)}:{line}: {own} imports {module}"
        for own, path in package_modules()
        if own in ALLOWED
        for line, module in imported(path)
        if area(module) not in ALLOWED[own]
    ]
    assert crossings == []


def test_every_package_is_placed() -> None:
    placed = set(ALLOWED) | {"local"}
    assert {own for own, _ in package_modules()} <= placed


def test_developer_tooling_is_imported_by_nothing_of_the_package() -> None:
    users = [
        f"{path.relative_to(ROOT)}:{line}"
        for own, path in package_modules()
        if own != "local"
        for line, module in imported(path)
        if area(module) == "local"
    ]
    assert users == []


def test_only_wire_converters_clients_and_servicers_import_v1() -> None:
    speaking = {
        str(path.relative_to(PACKAGE))
        for own, path in package_modules()
        if own not in ("v1", "clients", "local")
        if any(area(module) == "v1" for _, module in imported(path))
    }
    assert sorted(speaking - set(SPEAKS_V1)) == []  # a new one: a wire converter? a client?
    assert sorted(set(SPEAKS_V1) - speaking) == []  # one that no longer does


SETTINGS_BUILT = {"cli/context.py", "core/settings.py"}  # per command; settings_or_exit


def builds_settings(path: Path) -> list[int]:
    """The lines where ``path`` calls ``Settings(...)``."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Settings"
    ]


def test_settings_are_built_only_where_a_process_starts() -> None:
    built = [
        f"{path.relative_to(ROOT)}:{line}"
        for own, path in package_modules()
        if own != "local" and path.name != "__main__.py"
        if str(path.relative_to(PACKAGE)) not in SETTINGS_BUILT
        for line in builds_settings(path)
    ]
    assert built == []


@pytest.mark.parametrize("folder", PLUGIN_FOLDERS, ids=lambda f: str(f.relative_to(ROOT)))
def test_plugins_import_only_the_sdk(folder: Path) -> None:
    found = list(modules(folder))
    assert found, f"no plugin under {folder}"
    reaching = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in found
        for line, module in imported(path)
        if module != "headrace.sdk" and not module.startswith("headrace.sdk.")
    ]
    assert reaching == []


def lines(paths: Iterator[Path]) -> int:
    return sum(len(p.read_text().splitlines()) for p in paths)


def folders() -> list[Path]:
    """Every folder of the package's own code: not the generated ``v1``, not plugins."""
    return [
        f
        for f in sorted({p.parent for _, p in package_modules()} | {PACKAGE})
        if f.relative_to(PACKAGE).parts[:1] not in (("v1",), ("plugins",))
    ]


def test_no_folder_is_flat_or_holds_too_much_of_the_package() -> None:
    # The package's own code: its generated protobuf code aside, its built-in plugins in.
    total = lines(p for p in modules(PACKAGE) if "v1" not in p.relative_to(PACKAGE).parts[:1])
    too_flat = {
        str(f.relative_to(PACKAGE)): n
        for f in folders()
        if (n := len(list(f.glob("*.py")))) > MOST_MODULES
    }
    too_big = {
        str(f.relative_to(PACKAGE)): round(share, 2)
        for f in folders()
        if f != PACKAGE and (share := lines(p for p in modules(f)) / total) > LARGEST_SHARE
    }
    assert too_flat == {} and too_big == {}


MOST_CLASS_LINES = 350
MOST_METHODS = 30


def large_classes() -> Iterator[str]:
    for path in modules(PACKAGE):
        if "v1" in path.relative_to(PACKAGE).parts[:1]:
            continue  # generated
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef) or node.end_lineno is None:
                continue
            methods = [
                n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            if node.end_lineno - node.lineno + 1 > MOST_CLASS_LINES or len(methods) > MOST_METHODS:
                yield f"{path.relative_to(PACKAGE)}:{node.name}"


def test_no_class_does_everything_around_it() -> None:
    """A class over 350 lines or 30 methods holds parts a reader cannot tell apart: split it
    into the parts, passed in (as the worker's are: ``worker/build_worker``)."""
    assert sorted(large_classes()) == []
