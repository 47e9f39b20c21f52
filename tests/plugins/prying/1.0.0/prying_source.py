"""prying source 1.0.0: a plugin that reaches past what it was given, to show it cannot.

Its task, as it starts, tries each of these and writes what happened to
``<report.path>/report.json`` (``{"attempt": "ok: ..." or "refused: ..."}``):

- ``read_file``: read ``target.file`` (the tokens file, a private key);
- ``read_worker_environ``: read its worker's ``/proc/<ppid>/environ``;
- ``join_coordinator``: join the coordinator (``HEADRACE_COORDINATOR_ADDR``) as
  ``join.as``, with whatever token and CA its environment holds;
- ``produce_requests``: produce a command to ``<HEADRACE_CLUSTER>-requests`` with whatever Kafka
  login its environment holds;
- ``read_configs``: read the ``<HEADRACE_CLUSTER>-configs`` topic, where the session key is;
- ``read_offsets``: the same with the offsets topic, which source tasks may use: the control,
  which says the login and the broker work, so a refusal of the other is the broker's;
- ``listen_tcp``: listen on a TCP port, to serve what it took;
- ``call_sibling_hosts``: call every other plugin host of its worker over its socket, whose
  path is its own socket's with another folder name (its folder is its temporary folder's).

It imports only the SDK of headrace; everything else is what any plugin could bring.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.sdk import SourceConnector, SourceRecord, SourceTask

VERSION = "1.0.0"


class PryingSourceConnector(SourceConnector):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type[PryingSourceTask]:
        return PryingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _join_message(worker_id: str) -> bytes:
    """A WorkerMessage{join: Join{worker_id}}, encoded by hand: a plugin has no stubs."""
    name = worker_id.encode()
    join = b"\x0a" + _varint(len(name)) + name
    return b"\x0a" + _varint(len(join)) + join


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _kafka_login() -> dict[str, Any]:
    env = os.environ
    login: dict[str, Any] = {"bootstrap_servers": env.get("KAFKA_BOOTSTRAP_SERVERS", "")}
    protocol = env.get("KAFKA_SECURITY_PROTOCOL", "") or "PLAINTEXT"
    login["security_protocol"] = protocol
    if "SSL" in protocol:
        context = ssl.create_default_context(cafile=env.get("KAFKA_SSL_CAFILE") or None)
        login["ssl_context"] = context
    if protocol.startswith("SASL"):
        login |= {
            "sasl_mechanism": env.get("KAFKA_SASL_MECHANISM", ""),
            "sasl_plain_username": env.get("KAFKA_SASL_USERNAME", ""),
            "sasl_plain_password": env.get("KAFKA_SASL_PASSWORD", ""),
        }
    return login


class PryingSourceTask(SourceTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        report: dict[str, str] = {}
        attempts = {
            "read_file": lambda: Path(config["target.file"]).read_text(),
            "read_worker_environ": lambda: Path(f"/proc/{os.getppid()}/environ").read_bytes(),
        }
        for name, attempt in attempts.items():
            try:
                report[name] = f"ok: {len(attempt())} characters"
            except OSError as exc:
                report[name] = f"refused: {exc}"
        report["join_coordinator"] = await self._join(config.get("join.as", "worker-1"))
        report["produce_requests"] = await self._produce()
        report["read_configs"] = await self._read("configs")
        report["read_offsets"] = await self._read("offsets")
        report["listen_tcp"] = self._listen()
        report["call_sibling_hosts"] = await self._siblings()
        path = Path(config["report.path"]) / "report.json"
        path.write_text(json.dumps(report, indent=2))

    async def _join(self, worker_id: str) -> str:
        env = os.environ
        address = env.get("HEADRACE_COORDINATOR_ADDR", "").split(",")[0]
        metadata = (
            (("authorization", f"Bearer {env['HEADRACE_TOKEN']}"),)
            if env.get("HEADRACE_TOKEN")
            else ()
        )
        if env.get("HEADRACE_TLS_CA"):
            credentials = grpc.ssl_channel_credentials(_read(env["HEADRACE_TLS_CA"]))
            channel = grpc.aio.secure_channel(address, credentials)
        else:
            channel = grpc.aio.insecure_channel(address)
        join = channel.stream_stream(
            "/headrace.v1.Coordinator/Join",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )

        try:
            call = join(metadata=metadata, timeout=20)
            # As a worker does: the coordinator's go-ahead first, then the Join.
            if ("headrace-go-ahead", "1") in tuple(await call.initial_metadata() or ()):
                await call.write(_join_message(worker_id))
            answer = await call.read()
            if answer is grpc.aio.EOF:
                return "refused: the stream ended"
            return f"ok: the coordinator answered {len(answer)} bytes"
        except grpc.aio.AioRpcError as exc:
            return f"refused: {exc.code().name}: {exc.details()}"
        finally:
            await channel.close()

    async def _produce(self) -> str:
        topic = f"{os.environ.get('HEADRACE_CLUSTER', 'headrace')}-requests"
        producer = AIOKafkaProducer(**_kafka_login(), request_timeout_ms=10_000)
        try:
            await producer.start()
            command = {"id": "pried", "method": "DeleteConnector", "request": {"name": "x"}}
            await producer.send_and_wait(topic, json.dumps(command).encode(), key=b"pried")
            return "ok: produced to " + topic
        except Exception as exc:  # noqa: BLE001 - whatever stopped it is the report
            return f"refused: {type(exc).__name__}: {exc}"
        finally:
            await producer.stop()

    async def _read(self, role: str) -> str:
        topic = f"{os.environ.get('HEADRACE_CLUSTER', 'headrace')}-{role}"
        consumer = AIOKafkaConsumer(**_kafka_login(), request_timeout_ms=10_000)
        try:
            await consumer.start()
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            # Asked for outright, so a refusal is raised rather than retried in the background.
            first = (await consumer.beginning_offsets([partition]))[partition]
            end = (await consumer.end_offsets([partition]))[partition]
            consumer.seek(partition, first)
            read = 0
            while read < end - first:
                got = await consumer.getmany(partition, timeout_ms=5000)
                if not got:
                    break
                read += sum(len(r) for r in got.values())
            return f"ok: read {read} of {end - first} records of {topic}"
        except Exception as exc:  # noqa: BLE001 - whatever stopped it is the report
            return f"refused: {type(exc).__name__}: {exc}"
        finally:
            await consumer.stop()

    def _listen(self) -> str:
        server = socket.socket()
        try:
            server.bind(("127.0.0.1", 0))
            server.listen()
            return f"ok: listening on port {server.getsockname()[1]}"
        except OSError as exc:
            return f"refused: {exc}"
        finally:
            server.close()

    async def _siblings(self) -> str:
        own = Path(os.environ["TMPDIR"]).parent / "host.sock"  # its folder holds its socket
        try:
            found = [p for p in own.parent.parent.glob("*/host.sock") if p != own]
        except OSError as exc:
            return f"refused: {exc}"
        answers = []
        for sibling in found:
            async with grpc.aio.insecure_channel(f"unix:{sibling}") as channel:
                describe = channel.unary_unary(
                    "/headrace.v1.PluginHost/Describe",
                    request_serializer=lambda b: b,
                    response_deserializer=lambda b: b,
                )
                try:
                    await describe(b"", timeout=10)
                    answers.append(f"ok: {sibling.parent.name} answered")
                except grpc.aio.AioRpcError as exc:
                    answers.append(f"refused: {exc.code().name}")
        if not answers:
            return "refused: no sibling could be found"
        return "; ".join(answers)

    async def poll(self) -> list[SourceRecord]:
        await asyncio.sleep(0.5)
        return []
