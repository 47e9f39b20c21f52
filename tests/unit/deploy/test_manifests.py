"""The deploy manifests, checked offline: against the schemas of what reads them, and against the
code they run, so that neither can drift from the other.

- Kubernetes: every resource of the kustomize bases (``deploy/<service>/``) and of the overlays
  (``deploy/overlays/*``) as rendered, valid against the Kubernetes JSON schemas that
  kubernetes-validate bundles, strictly (an unknown field fails), for the oldest and the newest
  Kubernetes we claim. The overlays are rendered by :func:`render`, a small kustomize for the part
  of kustomize they use (it refuses the rest), itself checked against ``kubectl kustomize`` where
  kubectl is installed.
- ``deploy/compose.yaml``: valid against the Compose Specification's schema (``deploy/schemas/``).
- The Dockerfile (read with dockerfile-parse): a Python 3.11 slim base with Java 17, the package
  installed from a wheel, a non-root user, a gRPC HEALTHCHECK, an entrypoint whose services exist.
- Every environment variable handed to a headrace container is one the code reads.
- Ports: where each service listens (its flags, its settings) is a container port; the probes ask
  its gRPC port for a health name it serves; Services and the settings' addresses lead there.
- TLS: a container serving it is probed by exec probes of ``headrace probe`` (Kubernetes' grpc:
  probes speak only plaintext) naming a host its certificate carries; every file and token comes
  from a key of a Secret the deploy guide's table lists (``docs/operations/deploy.md``,
  Kubernetes), and every key listed is read; no secret value
  is in a manifest. The production pods' settings are loaded, and their probes run, against
  servers given Secrets made as that table says.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import grpc
import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]  # ships no type information
import pytest
import trustme
import yaml
from click.testing import CliRunner
from dockerfile_parse import DockerfileParser  # type: ignore[import-untyped]  # nor does this
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from headrace.cli.main import cli
from headrace.cli.probe import probe as probe_command
from headrace.core.observability.health import full_name
from headrace.core.rpc import split_address
from headrace.core.security import auth, kafkasecurity
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import Settings
from headrace.local.kafka import DEFAULT_KAFKA_VERSION
from headrace.v1 import config_pb2, coordinator_pb2, executor_pb2

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
SERVICES = ("config", "coordinator", "worker", "executor")
OVERLAYS = ("local", "production")
K8S_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"headrace:{VERSION}"

# The flags each service takes where it listens from; without them it would listen where its
# settings say the others reach it (a Service's name), which no pod can bind.
LISTEN_FLAGS = {
    "config": ("address", "rest-address"),
    "coordinator": ("address",),
    "worker": (),
    "executor": ("host", "port"),
}
# The setting that says where each service's gRPC server is reached; the image's HEALTHCHECK
# probes its port.
ADDRESS_SETTING = {
    "config": "HEADRACE_CONFIG_ADDR",
    "coordinator": "HEADRACE_COORDINATOR_ADDR",
    "worker": "HEADRACE_WORKER_ADDR",
    "executor": "HEADRACE_EXECUTOR_ADDR",
}
# The health name of each service's API, SERVING once it answers from current state; a worker
# serves no API, only the server's name ("").
API = {
    "config": full_name(config_pb2, "ConfigService"),
    "coordinator": full_name(coordinator_pb2, "Coordinator"),
    "worker": "",
    "executor": full_name(executor_pb2, "Executor"),
}
# What Kubernetes' readiness probes ask: the API, but for a coordinator, whose standby replicas
# must count as healthy (deploy/coordinator/deployment.yaml says why).
READINESS = {**API, "coordinator": ""}
# Variables read by what the code runs rather than by the code: where, to check they still are.
THIRD_PARTY = {"PYSPARK_SUBMIT_ARGS": ("pyspark", "java_gateway.py")}

Resource = dict[str, Any]


# -- kustomize, the part of it the overlays use ----------------------------------------------------

KUSTOMIZATION = {"apiVersion", "kind", "namespace", "resources", "images", "replicas", "patches"}
CLUSTER_SCOPED = {"Namespace"}
# The strategic merge keys (Kubernetes' patchMergeKey) of the lists a patch may merge into.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
}


def documents(path: Path) -> list[Resource]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def render(folder: Path) -> list[Resource]:
    """``kustomize build folder``, for resources, namespace, images, replicas and patches (files
    of strategic merge patches); a kustomization asking for more fails, rather than render wrong."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert set(kustomization) <= KUSTOMIZATION, f"render() cannot do {folder}: {kustomization}"
    resources: list[Resource] = []
    for entry in kustomization.get("resources", []):
        path = folder / entry
        resources += render(path) if path.is_dir() else documents(path)
    for patch in kustomization.get("patches", []):
        assert set(patch) == {"path"}, f"render() cannot do the patch {patch}"
        for change in documents(folder / patch["path"]):
            i = index(resources, change["kind"], change["metadata"]["name"])
            resources[i] = merge(resources[i], change)
    if namespace := kustomization.get("namespace"):
        for r in resources:
            if r["kind"] not in CLUSTER_SCOPED:
                r["metadata"]["namespace"] = namespace
    for image in kustomization.get("images", []):
        for c in (c for r in resources for c in containers(r)):
            name, _, tag = c["image"].partition(":")
            if name == image["name"]:
                tag = image.get("newTag", tag)
                c["image"] = image.get("newName", name) + (f":{tag}" if tag else "")
    for replicas in kustomization.get("replicas", []):
        (workload,) = [r for r in resources if workload_name(r) == replicas["name"]]
        workload["spec"]["replicas"] = replicas["count"]
    return resources


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """A strategic merge patch: maps merge, null deletes, lists with a merge key merge by it."""
    if isinstance(base, dict) and isinstance(patch, dict):
        assert not any(k.startswith("$") for k in patch), f"render() cannot do {patch}"
        merged = dict(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = merge(base[key], value, key) if key in base else without_nulls(value)
        return merged
    if isinstance(base, list) and patch and isinstance(patch[0], dict):
        key = MERGE_KEYS.get(field)
        assert key, f"render() does not know how a list of {field} merges"
        items = list(base)
        for item in patch:
            found = [i for i, b in enumerate(items) if b[key] == item[key]]
            if found:
                items[found[0]] = merge(items[found[0]], item)
            else:
                items.append(without_nulls(item))
        return items
    return without_nulls(patch)


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return copy.deepcopy(value)


def index(resources: list[Resource], kind: str, name: str) -> int:
    found = [
        i for i, r in enumerate(resources) if (r["kind"], r["metadata"]["name"]) == (kind, name)
    ]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} of them"
    return found[0]


def workload_name(resource: Resource) -> str | None:
    is_workload = resource["kind"] in ("Deployment", "StatefulSet")
    return str(resource["metadata"]["name"]) if is_workload else None


def containers(resource: Resource) -> list[dict[str, Any]]:
    if workload_name(resource) is None:
        return []
    spec = resource["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def selected(resources: list[Resource], selector: dict[str, str]) -> list[Resource]:
    """The workloads whose pods a label selector selects."""
    return [
        r
        for r in resources
        if workload_name(r)
        and selector.items() <= r["spec"]["template"]["metadata"]["labels"].items()
    ]


# Every set of resources applied together: the four bases, and each overlay as rendered.
SETS = {
    "bases": [r for s in SERVICES for r in render(DEPLOY / s)],
    **{o: render(DEPLOY / "overlays" / o) for o in OVERLAYS},
}


# -- what the manifests run ------------------------------------------------------------------------


def env_of(container: dict[str, Any], resources: list[Resource]) -> dict[str, str]:
    """The environment a container gets: its env, and the ConfigMaps of its envFrom."""
    env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
    for source in container.get("envFrom", []):
        env |= resources[index(resources, "ConfigMap", source["configMapRef"]["name"])]["data"]
    return env


def listens(service: str, args: list[str], env: dict[str, str]) -> dict[str, tuple[str, int]]:
    """Where a service started with these flags (only ``--name=value``, so they can be read here)
    and this environment listens: grpc, rest (the config service's), metrics: (host, port)."""
    assert all(a.startswith("--") and "=" in a for a in args), f"--name=value flags: {args}"
    given = dict(a[2:].split("=", 1) for a in args)
    assert set(LISTEN_FLAGS[service]) <= set(given), f"{service} needs {LISTEN_FLAGS[service]}"
    found = {"metrics": split_address(env["HEADRACE_METRICS_ADDR"])}
    if service == "executor":
        found["grpc"] = (given["host"], int(given["port"]))
    elif service == "worker":
        found["grpc"] = split_address(env["HEADRACE_WORKER_ADDR"])
    else:
        found["grpc"] = split_address(given["address"])
    if service == "config":
        found["rest"] = split_address(given["rest-address"])
    return found


def headrace_containers() -> Iterator[tuple[str, list[Resource], Resource, dict[str, Any]]]:
    """(set, its resources, workload, container) of every container running the image."""
    for where, resources in SETS.items():
        for r in resources:
            for c in containers(r):
                if c["image"].partition(":")[0] == "headrace":
                    yield where, resources, r, c


PROBES = ("startupProbe", "livenessProbe", "readinessProbe")
POD_IP = "(the pod's IP)"  # where Kubernetes' own probes dial


@dataclass(frozen=True)
class Probed:
    """What a probe asks: where, for which health name, and, for an exec probe of ``headrace
    probe`` (the TLS one), the name the server's certificate must carry."""

    host: str  # POD_IP, 127.0.0.1, or "$(NAME)": a variable of the container
    port: int
    service: str
    server_name: str | None  # None: Kubernetes' grpc: probe, which speaks plaintext only


def probed(probe: dict[str, Any]) -> Probed:
    """What a probe asks. An exec probe is ``headrace probe``, read with its own option parser
    (an unknown flag fails here), or that alone run by ``sh -c`` to read a variable Kubernetes
    does not expand in a probe's command (one from valueFrom: kubelet leaves them empty)."""
    if "grpc" in probe:
        assert "exec" not in probe, probe
        return Probed(POD_IP, probe["grpc"]["port"], probe["grpc"].get("service", ""), None)
    command = probe["exec"]["command"]
    if command[:2] == ["sh", "-c"]:
        assert len(command) == 3, command
        run, *words = shlex.split(command[2])
        assert run == "exec", f"the probe must be what the shell runs: {command}"
    else:
        words = command
        assert not any("$" in w for w in words), f"nothing expands a variable here: {command}"
    assert words[:2] == ["headrace", "probe"], command
    params = probe_command.make_context("probe", words[2:]).params
    host, port = split_address(params["address"])
    variable = re.fullmatch(r"\$(\w+)", host)
    return Probed(
        f"$({variable.group(1)})" if variable else host,
        port,
        params["service"],
        params["server_name"],
    )


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def compose_services() -> Iterator[tuple[str, dict[str, Any], dict[str, str]]]:
    """(name, service, environment) of every compose service running the image."""
    for name, service in compose()["services"].items():
        if service["image"] == IMAGE:
            yield name, service, {k: str(v) for k, v in service["environment"].items()}


# -- Kubernetes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_kubernetes_resource_is_valid(version: str) -> None:
    errors = []
    for where, resources in SETS.items():
        for r in resources:
            try:
                kubernetes_validate.validate(r, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                path = "/".join(str(p) for p in exc.path)
                errors.append(f"{where} {r['kind']}/{r['metadata']['name']} {path}: {exc.message}")
    assert not errors


@pytest.mark.parametrize("folder", [*SERVICES, *(f"overlays/{o}" for o in OVERLAYS)])
def test_render_renders_what_kustomize_does(folder: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        why = "kubectl is not installed: render() is checked against its kustomize"
        if os.environ.get("HEADRACE_CI"):
            pytest.fail(why)  # CI says what it could not check, never skips it
        pytest.skip(why)
    command = [kubectl, "kustomize", str(DEPLOY / folder)]
    built = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)

    def keyed(resources: list[Resource]) -> dict[tuple[str, str], Any]:
        return {(r["kind"], r["metadata"]["name"]): in_order(r) for r in resources}

    assert keyed(render(DEPLOY / folder)) == keyed(list(yaml.safe_load_all(built.stdout)))


def in_order(value: Any) -> Any:
    """Lists of named items sorted by name: kustomize puts the items it patched first."""
    if isinstance(value, dict):
        return {k: in_order(v) for k, v in value.items()}
    if not isinstance(value, list):
        return value
    items = [in_order(v) for v in value]

    def key(item: Any) -> str | None:
        named = isinstance(item, dict) and ("name" in item or "mountPath" in item)
        return str(item.get("name", item.get("mountPath"))) if named else None

    if items and all(key(i) is not None for i in items):
        return sorted(items, key=lambda i: str(key(i)))
    return items


def test_every_service_listens_where_it_is_reached_and_probed() -> None:
    for where, resources, workload, container in headrace_containers():
        service, *args = container["args"]
        env = env_of(container, resources)
        ports = listens(service, args, env)
        at = f"{where} {workload['metadata']['name']}"
        assert {p["containerPort"] for p in container["ports"]} == {p for _, p in ports.values()}
        for kind, (host, _) in ports.items():
            # The coordinator's address names it in the lease: every replica's must differ.
            wanted = "$(POD_IP)" if (service, kind) == ("coordinator", "grpc") else "0.0.0.0"
            assert host == wanted, f"{at} {kind} listens on {host}"
        assert split_address(env[ADDRESS_SETTING[service]])[1] == ports["grpc"][1], at
        listening = ports["grpc"][0]
        for kind in PROBES:
            asked = probed(container[kind])
            assert asked.port == ports["grpc"][1], f"{at} {kind}"
            wanted = READINESS[service] if kind == "readinessProbe" else ""
            assert asked.service == wanted, f"{at} {kind}"
            if asked.host != POD_IP:  # from inside the container: loopback reaches 0.0.0.0
                assert asked.host == ("127.0.0.1" if listening == "0.0.0.0" else listening), at


def reached(resources: list[Resource], address: str) -> tuple[Resource, int]:
    """The workload and the container port that ``host:port``, a Service's, leads to."""
    host, port = split_address(address)
    service = resources[index(resources, "Service", host)]
    (workload,) = selected(resources, service["spec"]["selector"])
    (entry,) = [p for p in service["spec"]["ports"] if p["port"] == port]
    target = entry.get("targetPort", port)
    for p in (p for c in containers(workload) for p in c["ports"]):
        if target in (p.get("name"), p["containerPort"]):
            return workload, int(p["containerPort"])
    raise AssertionError(f"{address}: no container port {target}")


def test_services_and_addresses_lead_to_listening_ports() -> None:
    for where, resources in SETS.items():
        for service in (r for r in resources if r["kind"] == "Service"):
            if service["spec"].get("type") != "ExternalName":
                for port in service["spec"]["ports"]:
                    reached(resources, f"{service['metadata']['name']}:{port['port']}")
        for data in (r["data"] for r in resources if r["kind"] == "ConfigMap"):
            for target in ("config", "coordinator", "executor"):
                addresses = data.get(ADDRESS_SETTING[target])
                for address in addresses.split(",") if addresses else ():
                    workload, port = reached(resources, address)
                    (container,) = containers(workload)
                    service, *args = container["args"]
                    grpc_port = listens(service, args, env_of(container, resources))["grpc"][1]
                    assert (service, port) == (target, grpc_port), f"{where} {address}"
            if where != "bases":  # the bases leave where Kafka is to the overlays
                host, port = split_address(data["KAFKA_BOOTSTRAP_SERVERS"])
                kafka = resources[index(resources, "Service", host)]
                assert port in {p["port"] for p in kafka["spec"]["ports"]}, where


def test_statefulsets_and_budgets_select_their_pods() -> None:
    for where, resources in SETS.items():
        for r in resources:
            if r["kind"] == "StatefulSet":
                governing = resources[index(resources, "Service", r["spec"]["serviceName"])]
                assert governing["spec"]["clusterIP"] == "None", where
                assert selected(resources, governing["spec"]["selector"]) == [r], where
            if workload_name(r):
                labels = r["spec"]["template"]["metadata"]["labels"]
                assert r["spec"]["selector"]["matchLabels"].items() <= labels.items(), where
            if r["kind"] == "PodDisruptionBudget":
                assert len(selected(resources, r["spec"]["selector"]["matchLabels"])) == 1


def test_every_volume_has_one_source() -> None:
    # The schemas cannot say it, the API server refuses it: a patch that adds a source must
    # remove the one it replaces.
    for where, resources in SETS.items():
        for r in resources:
            for volume in (
                r["spec"]["template"]["spec"].get("volumes", []) if workload_name(r) else []
            ):
                assert len(set(volume) - {"name"}) == 1, f"{where} {volume}"


def test_settings_agree_between_services() -> None:
    shared = ("KAFKA_BOOTSTRAP_SERVERS", "HEADRACE_CLUSTER", *ADDRESS_SETTING.values())
    for where, resources in SETS.items():
        seen: dict[str, set[str]] = {}
        for r in resources:
            if r["kind"] == "ConfigMap" and r["metadata"]["name"].endswith("-settings"):
                for key, value in r["data"].items():
                    seen.setdefault(key, set()).add(value)
        assert all(len(seen.get(k, ())) <= 1 for k in shared), f"{where}: {seen}"


def quantity(text: str) -> int:
    """Bytes of a Kubernetes quantity (``2Gi``) or of a JVM size (``1g``)."""
    found = re.fullmatch(r"(\d+)(|Ki|Mi|Gi|k|m|g)", text)
    assert found is not None, text
    return int(found.group(1)) * 1024 ** {"": 0, "Ki": 1, "k": 1, "Mi": 2, "m": 2}.get(
        found.group(2), 3
    )


def test_the_executor_heap_fits_in_its_container() -> None:
    for where, resources, _, container in headrace_containers():
        if container["args"][0] == "executor":
            submit = env_of(container, resources)["PYSPARK_SUBMIT_ARGS"]
            heap = re.fullmatch(r"--driver-memory (\S+) pyspark-shell", submit)
            assert heap is not None, f"{where}: {submit}"
            limit = quantity(container["resources"]["limits"]["memory"])
            assert limit >= quantity(heap.group(1)) + quantity("512Mi"), where


def test_the_overlays_are_shaped_for_their_use() -> None:
    def by_name(where: str) -> dict[str, Resource]:
        return {n: r for r in SETS[where] if (n := workload_name(r))}

    local, production = by_name("local"), by_name("production")
    for service in SERVICES:
        assert local[service]["spec"]["replicas"] == 1
        small = containers(local[service])[0]["resources"]["limits"]["memory"]
        large = containers(production[service])[0]["resources"]["limits"]["memory"]
        assert quantity(large) > quantity(small), service
    for service in ("config", "coordinator", "worker"):
        spec = production[service]["spec"]
        assert spec["replicas"] >= 2, service
        assert spec["template"]["spec"]["affinity"]["podAntiAffinity"], service
    images = {(where, c["image"]) for where, _, _, c in headrace_containers()}
    assert {image for where, image in images if where in OVERLAYS} == {IMAGE}
    # TLS everywhere in production, and roles checked by every server with calls that need
    # one (a worker serves only health); the bases, a laptop and compose in plaintext.
    for where, resources, _, container in headrace_containers():
        env = {
            n for n, v in env_of(container, resources).items() if v or n in secret_refs(container)
        }
        secured = {n for n in env if n.startswith(("HEADRACE_TLS_", "HEADRACE_AUTH_"))}
        if where != "production":
            assert not secured | (env & {"HEADRACE_TOKEN"}), where
            continue
        wanted = {"HEADRACE_TLS_CERT", "HEADRACE_TLS_KEY", "HEADRACE_TLS_CA"}
        if container["args"][0] != "worker":
            wanted.add("HEADRACE_AUTH_TOKENS")
        assert secured == wanted, container["args"][0]
    security = ("HEADRACE_TLS_", "HEADRACE_AUTH_", "HEADRACE_TOKEN")
    assert not [n for _, _, env in compose_services() for n in env if n.startswith(security)]


# -- TLS, tokens and the Secrets they come from ----------------------------------------------------

# The page whose Kubernetes section lists the Secrets the operator creates.
DEPLOY_GUIDE = ROOT / "docs" / "operations" / "deploy.md"
# The settings that name a file the operator provides: where set, each is a key of a Secret.
FILE_SETTINGS = ("HEADRACE_TLS_CERT", "HEADRACE_TLS_KEY", "HEADRACE_TLS_CA", "HEADRACE_AUTH_TOKENS")
# What each service calls of the others with its own token (HEADRACE_TOKEN), and what its plugin
# processes call with theirs (HEADRACE_PLUGIN_TOKEN): a worker joins the coordinator; plugin
# processes write batches, run transforms' SQL, and in validation ask whether a query parses.
PLUGIN_CALLS = (
    "/headrace.v1.Executor/WriteBatch",
    "/headrace.v1.Executor/WriteStream",
    "/headrace.v1.Executor/Query",
    "/headrace.v1.Executor/CheckSql",
)
CALLS = {
    "config": (),
    "config plugins": PLUGIN_CALLS,
    "worker": ("/headrace.v1.Coordinator/Join",),
    "worker plugins": PLUGIN_CALLS,
}
JOINS = {"worker": "worker-0"}  # whose token joins, as which worker id
SecretKey = tuple[str, str]  # (the Secret's name, the key)


@dataclass(frozen=True)
class Documented:
    """What the deploy guide says goes in a key of a Secret the operator creates."""

    names: tuple[str, ...]  # a certificate's: the hosts it names
    role: str | None  # a token's role
    holder: str | None = None  # the name its tokens file line binds it to


def documented_secrets() -> dict[SecretKey, Documented]:
    """The deploy guide's table of the Secrets to create (its Kubernetes section): a row a
    Secret (or some of its keys), the keys, and what goes in them: a certificate "naming
    `host`", a token "of the role `role`"."""
    text = DEPLOY_GUIDE.read_text().split("\n## Kubernetes\n", 1)[1].split("\n## ", 1)[0]
    found: dict[SecretKey, Documented] = {}
    row = r"^\| `(headrace-[\w-]+)` \| (.+?) \| (.+) \|$"
    for secret, keys, what in re.findall(row, text, re.MULTILINE):
        role = re.search(r"role `(\w+)`", what)
        names = tuple(re.findall(r"naming `([^`]+)`", what))
        holder = re.search(r"\(`([^`]+)` in the tokens file\)", what)
        said = Documented(names, role.group(1) if role else None, holder and holder.group(1))
        found |= {(secret, key): said for key in re.findall(r"`([^`]+)`", keys)}
    return found


DOCUMENTED = documented_secrets()


def secret_files(container: dict[str, Any], workload: Resource) -> dict[str, SecretKey]:
    """path -> (Secret, key) of every file a Secret's volume puts in the container: the keys
    its items name, or without items every key the deploy guide gives that Secret."""
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"].get("volumes", [])}
    found: dict[str, SecretKey] = {}
    for mount in container.get("volumeMounts", []):
        source = volumes[mount["name"]].get("secret")
        if source is None:
            continue
        assert mount.get("readOnly") and "subPath" not in mount, mount
        name = source["secretName"]
        items = source.get("items") or [
            {"key": key, "path": key} for secret, key in DOCUMENTED if secret == name
        ]
        assert items, f"{name}: a Secret the deploy guide does not say to create"
        for item in items:
            found[f"{mount['mountPath']}/{item['path']}"] = (name, item["key"])
    return found


def secret_refs(container: dict[str, Any]) -> dict[str, SecretKey]:
    """variable -> (Secret, key) of the container's variables set from a Secret."""
    return {
        e["name"]: (ref["name"], ref["key"])
        for e in container.get("env", [])
        if (ref := e.get("valueFrom", {}).get("secretKeyRef"))
    }


def secret_variables() -> set[str]:
    """The variables that hold a secret itself: those of the settings kept out of repr (found
    by the variable a planted value turns up in), and Kafka's passwords."""
    base = Settings().to_env()
    found = {kafkasecurity.SASL_PASSWORD, kafkasecurity.SSL_KEY_PASSWORD}
    for hidden in (f.name for f in fields(Settings) if not f.repr):
        planted_value: Any = "planted"  # every hidden field is a string
        planted = replace(Settings(), **{hidden: planted_value}).to_env()
        found |= {name for name, value in planted.items() if value != base[name]}
    return found


def test_probes_speak_tls_where_the_service_serves_it() -> None:
    # Kubernetes' grpc: probes speak only plaintext: a server with a certificate is probed by
    # `headrace probe`, which speaks TLS as the container's settings say, naming the Service
    # that leads to the port it probes (the name the certificate carries); a plaintext one by
    # Kubernetes' own probes, which cost no process.
    for where, resources, workload, container in headrace_containers():
        serves_tls = bool(env_of(container, resources).get("HEADRACE_TLS_CERT"))
        at = f"{where} {workload['metadata']['name']}"
        for kind in PROBES:
            asked = probed(container[kind])
            assert (asked.server_name is not None) == serves_tls, f"{at} {kind}"
            if asked.server_name is not None:
                assert reached(resources, f"{asked.server_name}:{asked.port}") == (
                    workload,
                    asked.port,
                ), f"{at} {kind}: --server-name {asked.server_name!r}"


def test_files_and_tokens_come_from_the_secrets_the_deploy_guide_lists() -> None:
    used: set[SecretKey] = set()
    for where, resources, workload, container in headrace_containers():
        env, files = env_of(container, resources), secret_files(container, workload)
        at = f"{where} {workload['metadata']['name']}"
        for name in (n for n in FILE_SETTINGS if env.get(n)):
            assert env[name] in files, f"{at}: {name}={env[name]} is in no Secret's volume"
            used.add(files[env[name]])
        used |= set(secret_refs(container).values())
    # Every key read is one the deploy guide says to create, and every key it lists is read.
    assert used == set(DOCUMENTED)


def test_each_certificate_names_the_hosts_its_clients_dial() -> None:
    # The others dial a service at the host of its address setting (a worker: nothing but its
    # probes do); its probes name what --server-name says. The deploy guide says what each names.
    for where, resources, workload, container in headrace_containers():
        env = env_of(container, resources)
        if not env.get("HEADRACE_TLS_CERT"):
            continue
        service = container["args"][0]
        secret = secret_files(container, workload)[env["HEADRACE_TLS_CERT"]]
        dialed = {probed(container[kind]).server_name for kind in PROBES}
        if service != "worker":
            dialed.add(split_address(env[ADDRESS_SETTING[service]])[0])
        assert dialed <= set(DOCUMENTED[secret].names), f"{where} {service}: {secret}"


def make_secrets(ca: trustme.CA) -> dict[SecretKey, bytes]:
    """Every key of the deploy guide's table, made as it says: the CA's certificate, a certificate
    naming what its row names (and nothing else: no loopback) and its key, a token of its row's
    role, and the tokens file holding every one of those and an admin's."""
    made: dict[SecretKey, bytes] = {}
    tokens = {
        ref: (f"{said.role} {{}} {said.holder or ''}".rstrip(), secrets.token_hex(16))
        for ref, said in DOCUMENTED.items()
        if said.role
    }
    leaves: dict[str, trustme.LeafCert] = {}
    for (secret, key), said in DOCUMENTED.items():
        if key in ("tls.crt", "tls.key"):
            assert said.names, f"{secret}: which hosts does its certificate name?"
            leaf = leaves.setdefault(secret, ca.issue_cert(*said.names))
            chain = b"".join(p.bytes() for p in leaf.cert_chain_pems)
            made[(secret, key)] = chain if key == "tls.crt" else leaf.private_key_pem.bytes()
        elif key == "ca.crt":
            made[(secret, key)] = ca.cert_pem.bytes()
        elif (secret, key) in tokens:
            made[(secret, key)] = tokens[(secret, key)][1].encode()
        else:
            assert key == "tokens", (
                f"the deploy guide says nothing this test can make of {secret} {key}"
            )
            lines = [line.format(token) for line, token in tokens.values()]
            made[(secret, key)] = "\n".join(["admin " + secrets.token_hex(16), *lines]).encode()
    return made


def test_the_production_pods_start_and_pass_their_probes_with_those_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each production container's settings, its Secrets made as the deploy guide says and put where
    its volumes would: the server security loads as at start-up, its exec probes get SERVING
    from a server with it (and fail without --server-name: the certificate does not name
    loopback), and the tokens the services present have the roles their calls need."""
    made = make_secrets(trustme.CA())
    presented: dict[str, str] = {}
    policies: list[auth.Policy] = []
    runner = CliRunner()
    for where, resources, workload, container in headrace_containers():
        if where != "production":
            continue
        service, root = container["args"][0], tmp_path / container["args"][0]
        env = env_of(container, resources)
        for path, ref in secret_files(container, workload).items():
            (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (root / path.lstrip("/")).write_bytes(made[ref])
        env |= {n: str(root / env[n].lstrip("/")) for n in FILE_SETTINGS if env.get(n)}
        env |= {name: made[ref].decode() for name, ref in secret_refs(container).items()}
        for name in [n for n in os.environ if n.startswith(("HEADRACE_", "KAFKA_"))]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        settings = Settings()
        security = ServerSecurity.load(settings)
        assert security.tls is not None, service
        policies += [security.policy] if security.policy is not None else []
        if settings.token:
            presented[service] = settings.token
        if settings.plugin_token:
            presented[f"{service} plugins"] = settings.plugin_token
        server = grpc.server(
            futures.ThreadPoolExecutor(2), interceptors=security.threaded_interceptors()
        )
        servicer = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
        for name in {"", API[service]}:
            servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        address = f"127.0.0.1:{security.bind(server, '127.0.0.1:0')}"
        server.start()
        try:
            for kind in PROBES:
                asked = probed(container[kind])
                argv = ["probe", address, "--service", asked.service]
                served = runner.invoke(cli, [*argv, "--server-name", str(asked.server_name)])
                assert (served.exit_code, served.output) == (0, "SERVING\n"), f"{service} {kind}"
            # The certificate names the Service alone: a probe on loopback needs the name.
            assert runner.invoke(cli, argv).exit_code == 1, service
        finally:
            server.stop(None)
    assert set(presented) == set(CALLS) and policies
    for service, token in presented.items():
        for method, policy in ((m, p) for m in CALLS[service] for p in policies):
            need = auth.need_of(method)
            assert (
                need is not None and policy.refusal(method, need, f"Bearer {token}", None) is None
            ), (service, method)
    for service, worker_id in JOINS.items():
        joining = [p for p in policies if "/headrace.v1.Coordinator/Join" in CALLS[service]]
        assert all(
            p.join_refusal(worker_id, f"Bearer {presented[service]}", None) is None for p in joining
        ), service
    # A plugin process's token joins nothing, and may not act for its service.
    for policy in policies:
        plugin = f"Bearer {presented['worker plugins']}"
        assert policy.join_refusal("worker-0", plugin, None) is not None
        join = auth.need_of("/headrace.v1.Coordinator/Join")
        assert join is not None
        assert policy.refusal("/headrace.v1.Coordinator/Join", join, plugin, None) is not None


def test_no_secret_is_written_in_a_manifest() -> None:
    hidden = secret_variables()
    assert "HEADRACE_TOKEN" in hidden
    for where, resources in SETS.items():
        assert not [r for r in resources if r["kind"] == "Secret"], f"{where}: the operator's"
        for r in (r for r in resources if r["kind"] == "ConfigMap"):
            assert not set(r["data"]) & hidden, f"{where} {r['metadata']['name']}"
    for where, _, workload, container in headrace_containers():
        given = {e["name"] for e in container.get("env", []) if e["name"] in hidden}
        assert given <= set(secret_refs(container)), f"{where} {workload['metadata']['name']}"
    for name, _, env in compose_services():
        assert not set(env) & hidden, f"compose {name}"
    for path in [*DEPLOY.rglob("*.yaml"), DEPLOY / "entrypoint.sh"]:
        assert "-----BEGIN" not in path.read_text(), path


# -- compose ---------------------------------------------------------------------------------------


def test_compose_is_valid() -> None:
    schema = yaml.safe_load((DEPLOY / "schemas" / "compose-spec.json").read_text())
    jsonschema.Draft7Validator(schema).validate(compose())


def test_compose_services_listen_where_they_are_reached() -> None:
    spec = compose()["services"]
    running = {name: service["command"][0] for name, service, _ in compose_services()}
    assert set(running.values()) == set(SERVICES)
    for name, service, env in compose_services():
        kind, *args = service["command"]
        ports = listens(kind, args, env)
        assert all(host == "0.0.0.0" for host, _ in ports.values()), name
        assert split_address(env[ADDRESS_SETTING[kind]])[1] == ports["grpc"][1], name
        assert service["healthcheck"]["test"] == ["CMD", "headrace-service", "health"], name
        for target in ("config", "coordinator", "executor"):
            host, port = split_address(env[ADDRESS_SETTING[target]])
            other = spec[host]
            assert other["command"][0] == target, f"{name}: {host} runs no {target}"
            grpc_port = listens(target, other["command"][1:], other["environment"])["grpc"][1]
            assert port == grpc_port, f"{name}: {host}"
        kafka, port = split_address(env["KAFKA_BOOTSTRAP_SERVERS"])
        assert f"//{kafka}:{port}" in spec[kafka]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
        for other, condition in service.get("depends_on", {}).items():
            healthy = condition["condition"] == "service_healthy"
            assert not healthy or "healthcheck" in spec[other], f"{name} on {other}"
    # The broker the suite and `make run` default to, so what is tested is what is deployed.
    assert spec["kafka"]["image"] == f"apache/kafka:{DEFAULT_KAFKA_VERSION}"


# -- the environment -------------------------------------------------------------------------------


def is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def environ_key(node: ast.AST) -> ast.expr | None:
    """The key of a read of the environment: ``os.environ.get(key)`` (or ``setdefault``,
    ``pop``), ``os.environ[key]``, ``key in os.environ``, ``os.getenv(key)``."""
    match node:
        case ast.Call(
            func=ast.Attribute(attr="get" | "setdefault" | "pop", value=env), args=[key, *_]
        ):
            return key if is_environ(env) else None
        case ast.Call(func=ast.Attribute(attr="getenv") | ast.Name(id="getenv"), args=[key, *_]):
            return key
        case ast.Subscript(value=env, slice=key):
            return key if is_environ(env) else None
        case ast.Compare(left=key, ops=[ast.In() | ast.NotIn()], comparators=[env]):
            return key if is_environ(env) else None
    return None


def variables_the_code_reads() -> set[str]:
    """Every variable read under services/headrace, named by a string or by a module constant."""
    names = set()
    for path in (ROOT / "services" / "headrace").rglob("*.py"):
        tree = ast.parse(path.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            match environ_key(node):
                case ast.Constant(value=str(name)):
                    names.add(name)
                case ast.Name(id=constant) if constant in constants:
                    names.add(constants[constant])
    return names


READ = variables_the_code_reads()


def known(name: str) -> bool:
    return name in READ or name in THIRD_PARTY


def test_the_scan_finds_the_settings() -> None:
    assert set(Settings().to_env()) <= READ


def test_third_party_variables_are_still_read_there() -> None:
    for name, (package, module) in THIRD_PARTY.items():
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        assert name in (Path(spec.origin).parent / module).read_text()


def test_every_variable_given_to_a_service_is_read() -> None:
    for where, resources, workload, container in headrace_containers():
        downward = {
            v["name"] for v in container.get("env", []) if "fieldRef" in v.get("valueFrom", {})
        }
        for name in downward:  # only there for the args to name
            assert f"$({name})" in " ".join(container["args"]), f"{where} {name}"
        unread = {n for n in env_of(container, resources) if not known(n)} - downward
        assert not unread, f"{where} {workload['metadata']['name']}"
    for name, _, env in compose_services():
        assert {n for n in env if not known(n)} == set(), f"compose {name}"
    assert {n for n in dockerfile_env() if n.startswith("HEADRACE_") and not known(n)} == set()


# -- the image -------------------------------------------------------------------------------------

DOCKERFILE = DockerfileParser(path=str(ROOT / "Dockerfile"))
INSTRUCTIONS: list[tuple[str, str]] = [(i["instruction"], i["value"]) for i in DOCKERFILE.structure]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, value in INSTRUCTIONS:
        if instruction == "ENV":
            env |= dict(pair.split("=", 1) for pair in value.split())
    return env


def last(instruction: str) -> str:
    return [value for name, value in INSTRUCTIONS if name == instruction][-1]


def test_the_image_is_python_3_11_slim_with_java_17_and_the_package() -> None:
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", DOCKERFILE.baseimage)
    runs = [value for name, value in INSTRUCTIONS if name == "RUN"]
    assert any("openjdk-17-jre" in r for r in runs)
    assert any(re.search(r"pip install .*\.whl", r) for r in runs)
    assert not any(re.search(r"pip install .*(-e |--editable)", r) for r in runs)


def test_the_image_runs_as_the_user_the_pods_require() -> None:
    user = last("USER").split(":")[0]
    assert user.isdigit() and user != "0"
    env = dockerfile_env()
    builtin, mounted, baked = env["HEADRACE_PLUGIN_PATH"].split(":")
    assert builtin == f"{env['VIRTUAL_ENV']}/lib/python3.11/site-packages/headrace/plugins"
    # Installed live into the volume (the first entry not the built-ins'); baked in, after.
    copied = [value.split()[-2:] for name, value in INSTRUCTIONS if name == "COPY"]
    assert ["/plugins/", f"{baked}/"] in copied
    for where, _, workload, container in headrace_containers():
        pod = workload["spec"]["template"]["spec"]["securityContext"]
        assert pod["runAsUser"] == int(user) and pod["runAsNonRoot"], where
        own = container.get("securityContext", {})
        assert own.get("runAsUser", pod["runAsUser"]) == pod["runAsUser"], where
        assert own.get("runAsNonRoot", True) and not own.get("allowPrivilegeEscalation"), where
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts["var"] == env["HEADRACE_VAR"], where
        if container["args"][0] in ("config", "worker"):
            assert mounts["plugins"] == mounted, where


def test_the_entrypoint_runs_every_service_and_probes_its_health() -> None:
    entrypoint = (DEPLOY / "entrypoint.sh").read_text()
    copied = [value.split()[-2:] for name, value in INSTRUCTIONS if name == "COPY"]
    assert ["deploy/entrypoint.sh", "/usr/local/bin/headrace-service"] in copied
    assert '"headrace-service"' in last("ENTRYPOINT")
    assert last("HEALTHCHECK").endswith('CMD ["headrace-service", "health"]')
    started = re.search(r"^(\w+(?: \| \w+)*)\)\n\s+printf", entrypoint, re.MULTILINE)
    assert started is not None and started.group(1).split(" | ") == list(SERVICES)
    for service in SERVICES:
        assert importlib.util.find_spec(f"headrace.{service}.__main__") is not None, service
    # `health` probes each service's API on the port of its address setting.
    probing = entrypoint.split("\nhealth)", 1)[1]
    for service in SERVICES:
        block = probing.split(f"\n    {service})", 1)[1].split(";;", 1)[0]
        assert re.findall(r"\$\{(\w+)", block)[0] == ADDRESS_SETTING[service], service
        assert re.findall(r"name=(\S*)", block) == [API[service] or '""'], service


def glob_regex(glob: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regular expression (Go's filepath.Match, with ``**``)."""
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", glob)
    wild = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(wild.get(p, re.escape(p)) for p in parts))


def test_the_build_context_holds_what_the_dockerfile_copies() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line for line in lines if line and not line.startswith("#")]

    def ignored(path: str) -> bool:
        """Docker's rule: the last pattern matching the path or a folder above it decides."""
        parts = path.rstrip("/").split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        verdict = False
        for pattern in patterns:
            regex = glob_regex(pattern.removeprefix("!").rstrip("/"))
            if any(regex.fullmatch(p) for p in prefixes):
                verdict = not pattern.startswith("!")
        return verdict

    for name, value in INSTRUCTIONS:
        if name == "COPY" and "--from" not in value:
            for source in [w for w in value.split() if not w.startswith("--")][:-1]:
                assert (ROOT / source).exists() and not ignored(source), source
    assert all(ignored(p) for p in (".venv/bin/python", "var/log", "services/a/b/__pycache__"))


# -- headrace probe, which the image's HEALTHCHECK runs --------------------------------------------


def test_probe_exits_0_only_when_serving() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set("api", health_pb2.HealthCheckResponse.NOT_SERVING)
    try:
        runner = CliRunner()
        served = runner.invoke(cli, ["probe", address])
        assert (served.exit_code, served.output) == (0, "SERVING\n")
        assert runner.invoke(cli, ["probe", address, "--service", "api"]).exit_code == 1
        unknown = runner.invoke(cli, ["probe", address, "--service", "nope"])
        assert unknown.exit_code == 1 and "'nope'" in unknown.output
    finally:
        server.stop(None)


# -- the Grafana dashboard ----------------------------------------------------------------------

DASHBOARD = DEPLOY / "grafana" / "headrace.json"
_SERIES_SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def _defined_metrics() -> set[str]:
    """Every metric name the package defines (a Counter's without its ``_total``)."""
    source = "\n".join(p.read_text() for p in (ROOT / "services" / "headrace").rglob("*.py"))
    return set(re.findall(r'"(headrace_[a-z_]+)"', source))


def test_the_dashboard_asks_only_for_metrics_the_services_serve() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert exprs, "a dashboard without a query"
    defined = _defined_metrics()
    asked = {name for e in exprs for name in re.findall(r"headrace_[a-z_]+", e)}
    unknown = set()
    for name in asked:
        base = next((name.removesuffix(s) for s in _SERIES_SUFFIXES if name.endswith(s)), name)
        if name not in defined and base not in defined:
            unknown.add(name)
    assert not unknown, f"the dashboard asks for metrics no service defines: {sorted(unknown)}"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "two panels share an id"
