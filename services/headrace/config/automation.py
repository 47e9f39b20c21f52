"""Topic-driven automation: lifecycle commands read from ``<cluster>-requests``, answered on
``<cluster>-responses``, by a faust-streaming agent in the config service.

A command names a method of the gRPC ``ConfigService`` and carries its request; the agent applies
it through the same calls the gRPC API answers (``headrace.config.grpc_api.ConfigCalls``), in
this process, so a command takes exactly the path a gRPC client's call takes (validation, errors
and all). It comes in either of two encodings, and is answered in the
one it came in, keyed by its request id:

- JSON: ``{"id": "r1", "method": "CreateConnector", "request": {"name": "n", "config": {}}}``
  (the request in protobuf's JSON mapping), answered
  ``{"id": "r1", "code": "OK", "message": "", "response": {...}}``;
- protobuf: a ``Command``, answered with a ``CommandResult``.

``code`` is the gRPC status name: ``OK``, ``INVALID_ARGUMENT``, ``NOT_FOUND``...

Each command is applied once per request id, cluster-wide. The change a command makes is written
in one transaction with a record that it was applied (``request-<id>`` on the configs topic,
swept after an hour), and that transaction is decided against the configs topic read to its end
(``headrace.config.store``): a command found applied, because a crash came between its change
and its answer, or because another replica of the service read the same id under another record
key, is answered as its call answers when it succeeds (from the connector as it is now) and not
applied again. Answers are also kept in a faust table, keyed by the id and backed by its
changelog topic, so a command seen again is answered with the answer it had. Records may be
keyed by anything: by connector, to keep one connector's commands in order. Answers are at
least once.

A command that cannot be read (not JSON nor a ``Command``, an unknown method, a request that
does not parse) is answered with ``INVALID_ARGUMENT`` saying why; nothing a command carries
stops the agent.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import faust
import grpc
from faust.streams import _current_event
from faust.types import EventT
from google.protobuf import json_format, message_factory
from google.protobuf.message import DecodeError, Message

from headrace.config.grpc_api import CODES, SERVICE, ConfigCalls
from headrace.config.store import APPLYING, AlreadyApplied, Applying
from headrace.config.validation import ConfigRejected
from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.core.storage.topics import AUTOMATION_APP
from headrace.v1 import automation_pb2

PARTITIONS = 4
BATCH = 500  # commands read together at most, and applied at once where they may be
BATCH_WITHIN_S = 0.01  # how long a read waits for more before it applies what it has
APPLY_TIMEOUT_S = 60.0  # a command not applied by then is answered DEADLINE_EXCEEDED
Answer = tuple[str, bytes]  # (request id, the answer's bytes)


@dataclass(frozen=True)
class Command:
    """A command as read: what to call, with what, and how to answer."""

    id: str
    method: str
    request: Message
    as_json: bool


class Unreadable(Exception):
    """A command the agent cannot apply; the message says why."""


def methods() -> list[str]:
    """Every method a command may name."""
    return sorted(m.name for m in SERVICE.methods)


def _request_class(method: str) -> type[Message]:
    found = SERVICE.methods_by_name.get(method)
    if found is None:
        raise Unreadable(f"method: {method!r} is not one of {', '.join(methods())}")
    return message_factory.GetMessageClass(found.input_type)


def read(value: bytes | None, key: bytes | None) -> Command:
    """The command a record carries; Unreadable saying why there is none. A command without an
    id takes the record's key as its id."""
    if not value:
        raise Unreadable("the record has no value: send a JSON object or a Command")
    if value.lstrip()[:1] == b"{":
        return _read_json(value, key)
    try:
        pb = automation_pb2.Command.FromString(value)
    except DecodeError as exc:
        raise Unreadable(f"neither JSON nor a Command: {exc}") from None
    request = _request_class(pb.method)()
    try:
        request.ParseFromString(pb.request)
    except DecodeError as exc:
        raise Unreadable(f"request: not a {pb.method} request: {exc}") from None
    return Command(pb.id or _text(key), pb.method, request, as_json=False)


def _read_json(value: bytes, key: bytes | None) -> Command:
    try:
        body = json.loads(value)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Unreadable(f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise Unreadable('a command is a JSON object: {"id", "method", "request"}')
    method = body.get("method")
    if not isinstance(method, str):
        raise Unreadable(f"method: missing; one of {', '.join(methods())}")
    request = _request_class(method)()
    try:
        json_format.ParseDict(body.get("request") or {}, request)
    except json_format.ParseError as exc:
        raise Unreadable(f"request: not a {method} request: {exc}") from None
    return Command(str(body.get("id") or _text(key)), method, request, as_json=True)


def _subject(value: bytes | None, key: bytes | None) -> str | None:
    """The connector a command is about ('' for one that cannot be read, which is answered on
    its own); None for one about no connector, which must see every command before it."""
    try:
        command = read(value, key)
    except Unreadable:
        return ""
    return _subject_of(command)


def _subject_of(command: Command) -> str | None:
    fields = command.request.DESCRIPTOR.fields_by_name
    for field in ("name", "connector"):
        if field in fields:
            return str(getattr(command.request, field))
    return None


def _within(event: EventT) -> contextvars.Context:
    """A context in which ``event`` is faust's current event: the answers table keeps a
    command's answer in the partition of its changelog that matches the command's own, which
    faust finds from the current event, and a task of its own would have none."""
    context = contextvars.copy_context()
    context.run(_current_event.set, weakref.ref(event))  # faust's own marker, pinned version
    return context


def _text(key: bytes | None) -> str:
    return key.decode(errors="replace") if key else ""


def answer(
    command: Command | None,
    code: grpc.StatusCode,
    message: str = "",
    response: Message | None = None,
    request_id: str = "",
) -> bytes:
    """The answer to a command, in the encoding it came in (JSON for one that could not be
    read)."""
    name = code.name
    if command is not None and not command.as_json:
        return automation_pb2.CommandResult(
            id=command.id,
            code=name,
            message=message,
            response=response.SerializeToString() if response is not None else b"",
        ).SerializeToString()
    body: dict[str, Any] = {
        "id": command.id if command is not None else request_id,
        "code": name,
        "message": message,
    }
    if response is not None:
        body["response"] = json_format.MessageToDict(response, preserving_proto_field_name=True)
    return json.dumps(body).encode()


class Automation:
    """The agent, and the faust app that runs it."""

    def __init__(self, settings: Settings, calls: ConfigCalls) -> None:
        self.settings = settings
        self.app = faust.App(
            f"{settings.cluster}-{AUTOMATION_APP}",
            broker=f"kafka://{settings.bootstrap_servers}",
            broker_credentials=settings.kafka_security.faust_credentials(),
            web_enabled=False,
            store="memory://",
            # faust keeps a folder even for tables in memory: under the service's var folder,
            # not the working directory.
            datadir=str(settings.var_dir / f"{settings.cluster}-{AUTOMATION_APP}"),
            topic_partitions=PARTITIONS,
            autodiscover=False,
            # Commands, answers and the kept answers are bytes this module reads and writes.
            key_serializer="raw",
            value_serializer="raw",
            # A replica killed without leaving holds its share of the commands until the
            # group gives up on it: seconds, not faust's default minute.
            broker_session_timeout=10.0,
            broker_heartbeat_interval=1.0,
            broker_commit_every=1,
        )
        self.requests = self.app.topic(
            settings.topic("requests"), key_serializer="raw", value_serializer="raw"
        )
        self.responses = self.app.topic(
            settings.topic("responses"), key_serializer="raw", value_serializer="raw"
        )
        self.answers = self.app.Table("answers", default=None, key_type=bytes, value_type=bytes)
        self.app.agent(self.requests, name="commands")(self._agent)
        self._calls = calls
        self._applying: dict[str, asyncio.Future[bytes]] = {}
        self._log = log.get()

    async def start(self) -> None:
        await self.app.start()

    async def stop(self) -> None:
        await self.app.stop()

    async def _agent(self, stream: Any) -> AsyncIterator[None]:
        async for events in stream.take_events(BATCH, within=BATCH_WITHIN_S):
            for request_id, reply in await self.handle_all(events):
                await self.responses.send(key=request_id.encode(), value=reply)
            yield None

    async def handle_all(self, events: Sequence[EventT]) -> list[Answer]:
        """The answers to records read together, in their order. Commands about different
        connectors are applied at once (the service writes them in one transaction); those
        about one connector, in order; one about none (a list, the plugins) waits for those
        before it, and those after it wait for it."""
        chains: dict[str, asyncio.Task[Answer]] = {}
        answers: list[asyncio.Task[Answer]] = []
        for event in events:
            key, value = event.key, event.value
            subject = _subject(value, key)
            if subject is None:
                await asyncio.gather(*chains.values())
                chains.clear()
            after = chains.get(subject or "")
            task = asyncio.create_task(self._after(after, key, value), context=_within(event))
            answers.append(task)
            if subject is None:
                await task
            else:
                chains[subject] = task
        return list(await asyncio.gather(*answers))

    async def _after(
        self, before: asyncio.Task[Answer] | None, key: bytes | None, value: bytes | None
    ) -> Answer:
        if before is not None:
            await asyncio.wait({before})
        try:
            return await self.handle(key, value)
        except Exception:  # noqa: BLE001 - a command never stops the agent
            self._log.exception("automation_command_failed", key=_text(key))
            failed = answer(None, grpc.StatusCode.INTERNAL, "the command failed; see the log")
            return _text(key), failed

    async def handle(self, key: bytes | None, value: bytes | None) -> Answer:
        """(request id, answer) of one record: the kept answer of a command seen before, else
        the command applied through the gRPC API and its answer kept."""
        try:
            command = read(value, key)
        except Unreadable as exc:
            self._log.warning("automation_command_unreadable", key=_text(key), error=str(exc))
            return _text(key), answer(None, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if not command.id:
            reason = 'id: a command needs a request id (its "id", or the record key)'
            return "", answer(command, grpc.StatusCode.INVALID_ARGUMENT, reason)
        applying = self._applying.get(command.id)
        if applying is not None:  # the same id read again meanwhile: its answer, once
            return command.id, await asyncio.shield(applying)
        kept = self.answers.get(command.id.encode())
        if kept is not None:
            self._log.info("automation_command_repeated", id=command.id, method=command.method)
            return command.id, kept
        self._applying[command.id] = applied = asyncio.ensure_future(self._apply(command))
        try:
            reply = await asyncio.shield(applied)
        finally:
            del self._applying[command.id]
        self.answers[command.id.encode()] = reply
        return command.id, reply

    async def _apply(self, command: Command) -> bytes:
        """Applies the command, unless the configs topic says it was (a crash came between
        its change and its answer): then it is answered as a call made now would have been
        had it succeeded then, and not applied again."""
        try:
            async with asyncio.timeout(APPLY_TIMEOUT_S):
                try:
                    applied = await self._calls.applied(command.id)
                    if applied is not None:
                        raise AlreadyApplied(applied)
                    response = await self._applied_now(command)
                except AlreadyApplied as found:
                    self._log.info("automation_command_found_applied", id=command.id)
                    response = await self._calls.replayed(command.method, found.applied)
        except ConfigRejected as exc:
            code = CODES[exc.problem]
            self._log.info("automation_command_refused", id=command.id, code=code.name)
            return answer(command, code, exc.message)
        except TimeoutError:
            self._log.warning("automation_command_timed_out", id=command.id)
            reason = f"the command was not applied within {APPLY_TIMEOUT_S:.0f}s"
            return answer(command, grpc.StatusCode.DEADLINE_EXCEEDED, reason)
        self._log.info("automation_command_applied", id=command.id, method=command.method)
        return answer(command, grpc.StatusCode.OK, "", response)

    async def _applied_now(self, command: Command) -> Message:
        subject = _subject_of(command) or ""
        token = APPLYING.set(Applying(command.id, command.method, subject))
        try:
            response: Message = await getattr(self._calls, command.method)(command.request)
            return response
        finally:
            APPLYING.reset(token)
