"""Every gRPC server answers the standard health service and server reflection, probed with
real gRPC clients as Kubernetes probes and grpcurl would: the config service and two
coordinator replicas as real processes, on the suite's broker."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from headrace.core.observability.health import SERVER
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.local.kafka import free_port
from headrace.local.stack import CONFIG, COORDINATOR, Stack
from tests.support import local_settings, wait_for

pytestmark = pytest.mark.kafka

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture(scope="module")
def services(stack: Stack) -> Settings:
    return stack.settings


@pytest.fixture(scope="module")
def stack(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("health")
    settings = local_settings(kafka, f"health{free_port()}", folder, (BUILTIN_PLUGINS,), 2)
    stack = Stack(settings)
    try:
        stack.start("config")
        stack.start("coordinator", ready=COORDINATOR)  # the first replica leads
        stack.start("coordinator-2")  # the second stands by
        yield stack
    finally:
        stack.down()


def status(address: str, service: str) -> int:
    with grpc.insecure_channel(address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
    return int(answer.status)


def test_the_config_service_is_live_and_ready(services: Settings) -> None:
    assert status(services.config_addr, SERVER) == SERVING
    assert status(services.config_addr, CONFIG) == SERVING
    assert status(services.config_addr, "headrace.v1.TaskConfigService") == SERVING


def test_a_name_no_server_serves_is_not_found(services: Settings) -> None:
    with pytest.raises(grpc.RpcError) as info:
        status(services.config_addr, "headrace.v1.Nothing")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_only_the_leading_coordinator_replica_is_ready(services: Settings) -> None:
    leader, standby = services.coordinator_addrs
    assert status(leader, SERVER) == status(standby, SERVER) == SERVING
    assert status(leader, COORDINATOR) == SERVING
    assert status(standby, COORDINATOR) == NOT_SERVING


def test_a_health_watch_hears_the_standby_take_over(stack: Stack) -> None:
    """Watch (what a client waiting for a leader would use) streams the change when the
    leading replica stops and the standby takes the lease."""
    leader, standby = stack.settings.coordinator_addrs
    with grpc.insecure_channel(standby) as channel:
        watched = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=COORDINATOR), timeout=120
        )
        assert next(watched).status == NOT_SERVING
        stack.stop("coordinator")
        assert next(watched).status == SERVING
        watched.cancel()
    stack.start("coordinator")
    wait_for("the old leader back, standing by", lambda: status(leader, SERVER) == SERVING)
    assert status(leader, COORDINATOR) == NOT_SERVING


@pytest.mark.parametrize(
    ("address", "api", "method"),
    [
        ("config_addr", CONFIG, "CreateConnector"),
        ("coordinator", COORDINATOR, "Join"),
    ],
)
def test_reflection_describes_each_api_with_no_proto_files(
    services: Settings, address: str, api: str, method: str
) -> None:
    target = services.coordinator_addrs[0] if address == "coordinator" else services.config_addr
    with grpc.insecure_channel(target) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        listed = set(database.get_services())
        assert {api, "grpc.health.v1.Health"} <= listed
        found = DescriptorPool(database).FindServiceByName(api)
        assert method in {m.name for m in found.methods}
