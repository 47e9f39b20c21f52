"""The executor's on-demand Spark: started once, by the first call that needs it, whatever
arrives meanwhile; a failed start answered UNAVAILABLE and tried again by the next call; log
levels taken before Spark runs. A fake service stands in for Spark: only the start is looked at."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import grpc
import pytest

from headrace.core.observability import log
from headrace.executor.ondemand import OnDemand
from headrace.executor.service import ExecutorService
from headrace.v1 import coordinator_pb2, executor_pb2


class Aborted(Exception):
    pass


class Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


class FakeService:
    def CheckSql(self, request: Any, context: Any) -> executor_pb2.CheckSqlResponse:
        return executor_pb2.CheckSqlResponse()

    def SetLogLevels(self, request: Any, context: Any) -> executor_pb2.SetLogLevelsResponse:
        return executor_pb2.SetLogLevelsResponse(changed=["from-the-service"])


def test_calls_arriving_together_share_one_start() -> None:
    starts: list[int] = []
    release = threading.Event()

    def start() -> ExecutorService:
        starts.append(1)
        release.wait(5)
        return cast(ExecutorService, FakeService())

    served = OnDemand(start)
    assert served.started is None
    with ThreadPoolExecutor(4) as pool:
        answers = [
            pool.submit(served.CheckSql, executor_pb2.CheckSqlRequest(sql="SELECT 1"), Context())
            for _ in range(4)
        ]
        release.set()
        assert all(isinstance(a.result(5), executor_pb2.CheckSqlResponse) for a in answers)
    assert starts == [1] and served.started is not None


def test_a_failed_start_is_unavailable_and_the_next_call_tries_again() -> None:
    outcomes: list[Exception | None] = [RuntimeError("no java on the PATH"), None]

    def start() -> ExecutorService:
        failure = outcomes.pop(0)
        if failure is not None:
            raise failure
        return cast(ExecutorService, FakeService())

    served = OnDemand(start)
    request = executor_pb2.CheckSqlRequest(sql="SELECT 1")
    with pytest.raises(Aborted) as refused:
        served.CheckSql(request, cast(grpc.ServicerContext, Context()))
    code, details = refused.value.args
    assert code is grpc.StatusCode.UNAVAILABLE and "no java on the PATH" in details
    assert served.CheckSql(request, cast(grpc.ServicerContext, Context())) is not None
    assert outcomes == []


def test_log_levels_need_no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def start() -> ExecutorService:
        raise AssertionError("log levels started Spark")

    applied: list[dict[str, tuple[str, int]]] = []

    def apply(levels: dict[str, tuple[str, int]]) -> list[str]:
        applied.append(levels)
        return []

    monkeypatch.setattr(log.cluster_levels, "apply", apply)
    request = coordinator_pb2.LogLevels()
    request.levels["org.apache.spark"].level = "WARN"
    request.levels["org.apache.spark"].at_ms = 7
    OnDemand(start).SetLogLevels(request, cast(grpc.ServicerContext, Context()))
    assert applied == [{"org.apache.spark": ("WARN", 7)}]
