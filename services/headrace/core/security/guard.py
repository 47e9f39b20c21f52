"""A gRPC server's security: its TLS (``headrace.core.security.tls``) and an interceptor that lets
each call through only for a caller with the role it needs (``headrace.core.security.auth``).

The interceptor wraps the call's handler rather than refusing in the interceptor itself: a
client certificate's name is known only to the call's context. A refusal is UNAUTHENTICATED
when the caller proved no identity, PERMISSION_DENIED when its role is too low, with a message
naming the role the call needs. Both an asyncio server's and a thread-pool server's (the
executor's) interceptors are here.
"""

from __future__ import annotations

import argparse
import hmac
import inspect
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from headrace.core.security import auth, tls
from headrace.core.settings import Settings

_FACTORIES: dict[tuple[bool, bool], tuple[str, Callable[..., grpc.RpcMethodHandler]]] = {
    (False, False): ("unary_unary", grpc.unary_unary_rpc_method_handler),
    (False, True): ("unary_stream", grpc.unary_stream_rpc_method_handler),
    (True, False): ("stream_unary", grpc.stream_unary_rpc_method_handler),
    (True, True): ("stream_stream", grpc.stream_stream_rpc_method_handler),
}


def _rewrapped(handler: grpc.RpcMethodHandler, wrap: Callable[[Any], Any]) -> Any:
    """``handler`` with its behaviour replaced by ``wrap(behaviour)``."""
    attribute, factory = _FACTORIES[(handler.request_streaming, handler.response_streaming)]
    return factory(
        wrap(getattr(handler, attribute)),
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def _common_name(context: Any) -> str | None:
    names = context.auth_context().get("x509_common_name") or ()
    return names[0].decode() if names else None


def _authorization(context: Any) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            return str(value)
    return None


@dataclass(frozen=True)
class ServerSecurity:
    """What a process's servers check: TLS (None: plaintext) and roles (None: no auth)."""

    tls: tls.Tls | None = None
    policy: auth.Policy | None = None

    @classmethod
    def load(cls, settings: Settings) -> ServerSecurity:
        """The process's security, every file read and checked; SecurityError naming the bad
        setting. A process without a certificate serves plaintext, even when it trusts a CA."""
        loaded = tls.load(settings)
        return cls(loaded if loaded is not None and loaded.serves else None, auth.load(settings))

    def join_refusal(self, worker_id: str, context: Any) -> str | None:
        """Why the caller may not join the coordinator as ``worker_id`` (see
        ``auth.Policy.join_refusal``); None when it may, or when auth is off."""
        if self.policy is None:
            return None
        return self.policy.join_refusal(worker_id, _authorization(context), _common_name(context))

    def refusal(self, method: str, context: Any) -> tuple[grpc.StatusCode, str] | None:
        """The status and message to end the call with, or None to let it through."""
        assert self.policy is not None
        need = auth.need_of(method)
        if need is None:
            return grpc.StatusCode.PERMISSION_DENIED, f"{method} is in no role table"
        refused = self.policy.refusal(method, need, _authorization(context), _common_name(context))
        if refused is None:
            return None
        if refused.authenticated:
            return grpc.StatusCode.PERMISSION_DENIED, refused.message
        return grpc.StatusCode.UNAUTHENTICATED, refused.message

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        return [] if self.policy is None else [AioGuard(self)]

    def threaded_interceptors(self) -> list[grpc.ServerInterceptor]:
        return [] if self.policy is None else [ThreadedGuard(self)]

    def bind(self, server: grpc.aio.Server | grpc.Server, address: str) -> int:
        """Listens on ``address``, with TLS when the process serves it; the port bound."""
        if self.tls is None:
            return server.add_insecure_port(address)
        return server.add_secure_port(address, tls.server_credentials(self.tls))


def security_or_exit(parser: argparse.ArgumentParser, settings: Settings) -> ServerSecurity:
    """The process's server security, checked before it starts: a bad setting ends it with
    the parser's usage error (exit code 2), naming the variable."""
    try:
        return ServerSecurity.load(settings)
    except tls.SecurityError as exc:
        parser.error(str(exc))


def _needs_no_check(method: str) -> bool:
    return auth.need_of(method) in (auth.Need.OPEN, auth.Need.SIGNED)


class AioGuard(grpc.aio.ServerInterceptor):
    """The role check of an asyncio server."""

    def __init__(self, security: ServerSecurity) -> None:
        self._security = security

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        method: str = details.method
        if handler is None or _needs_no_check(method):
            return handler
        security = self._security

        async def check(context: Any) -> None:
            refused = security.refusal(method, context)
            if refused is not None:
                await context.abort(*refused)

        return _checked_first(handler, check)


def _checked_first(handler: grpc.RpcMethodHandler, check: Callable[[Any], Awaitable[None]]) -> Any:
    """``handler`` with ``check(context)`` awaited before its behaviour: a check that aborts
    the call ends it there, streamed or not."""

    def wrap(behaviour: Any) -> Any:
        if inspect.isasyncgenfunction(behaviour):

            async def streamed(request: Any, context: Any) -> Any:
                await check(context)
                async for item in behaviour(request, context):
                    yield item

            return streamed

        async def answered(request: Any, context: Any) -> Any:
            await check(context)
            result = behaviour(request, context)
            return await result if inspect.isawaitable(result) else result

        return answered

    return _rewrapped(handler, wrap)


HOST_KEY_HEADER = "x-headrace-host-key"
HOST_KEY_ENV = "HEADRACE_HOST_KEY"
"""Where a plugin host finds the key its owner calls it with (a spare: in its claim)."""


def new_host_key() -> str:
    return secrets.token_urlsafe(32)


class HostKeyCheck(grpc.aio.ServerInterceptor):
    """A child process's server (a plugin host) answers only calls that carry the key its owner
    gave it: its socket's path is no secret from the other processes of its user (the sibling
    plugin processes among them), and a socket's file rights do not keep them out."""

    def __init__(self, key: str) -> None:
        self._key = key.encode()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None:
            return handler
        given = dict(details.invocation_metadata or ()).get(HOST_KEY_HEADER, "")
        if hmac.compare_digest(str(given).encode(), self._key):
            return handler

        async def refused(context: Any) -> None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "no key, or not this one")

        return _checked_first(handler, refused)


def with_host_key(key: str) -> list[grpc.aio.ClientInterceptor]:
    """The interceptors that have every call on a channel to a child's server carry its key
    (``HostKeyCheck``): one a kind of call, as a channel takes each as the first kind it is."""
    return [_KeyedUnary(key), _KeyedUnaryStream(key)]


class _Keyed:
    def __init__(self, key: str) -> None:
        self._pair = (HOST_KEY_HEADER, key)

    def _keyed(self, details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        metadata = grpc.aio.Metadata(*(details.metadata or ()), self._pair)
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )


class _KeyedUnary(_Keyed, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._keyed(details), request)


class _KeyedUnaryStream(_Keyed, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._keyed(details), request)


class ThreadedGuard(grpc.ServerInterceptor):
    """The role check of a thread-pool server."""

    def __init__(self, security: ServerSecurity) -> None:
        self._security = security

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = continuation(details)
        method: str = details.method
        if handler is None or _needs_no_check(method):
            return handler
        security = self._security

        def check(context: Any) -> None:
            refused = security.refusal(method, context)
            if refused is not None:
                context.abort(*refused)

        def wrap(behaviour: Any) -> Any:
            if inspect.isgeneratorfunction(behaviour):

                def streamed(request: Any, context: Any) -> Any:
                    check(context)
                    yield from behaviour(request, context)

                return streamed

            def answered(request: Any, context: Any) -> Any:
                check(context)
                return behaviour(request, context)

            return answered

        return _rewrapped(handler, wrap)
