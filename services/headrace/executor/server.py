"""The executor's gRPC server, apart from the service it serves.

Kept free of Spark, PySpark and pyarrow: an executor started on demand serves with this alone
until the first call that needs Spark (``headrace.executor.ondemand``) loads them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc

from headrace.core.rpc import GRPC_OPTIONS
from headrace.core.security.guard import ServerSecurity
from headrace.executor.admission import Limits
from headrace.v1 import executor_pb2_grpc


def build_server(
    service: executor_pb2_grpc.ExecutorServicer,
    host: str,
    port: int,
    limits: Limits,
    security: ServerSecurity,
) -> tuple[grpc.Server, int]:
    """A server (not started yet) for the service, and the port it bound (``port`` 0 picks one),
    with TLS and roles as ``security`` says."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=limits.threads, thread_name_prefix="executor-rpc"),
        options=GRPC_OPTIONS,
        # Past this gRPC refuses calls itself, so requests cannot queue up in memory unbounded
        # behind busy threads.
        maximum_concurrent_rpcs=limits.threads,
        interceptors=security.threaded_interceptors(),
    )
    executor_pb2_grpc.add_ExecutorServicer_to_server(service, server)
    bound = security.bind(server, f"{host}:{port}")
    return server, bound
