"""Client settings as a Connect user writes them: which reach aiokafka as what, in which order
they win, and why the others are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model.clientconfig import (
    KEYS,
    OWNED,
    Client,
    Login,
    client_config,
    merged,
    parse_login,
    refuse_overrides,
)
from headrace.core.model.workerconfig import with_worker_converters
from headrace.sdk.errors import ConfigException

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_each_client_s_keys_become_aiokafka_s_arguments() -> None:
    producer = client_config(
        Client.PRODUCER,
        {"compression.type": "ZSTD", "linger.ms": "20", "batch.size": "65536", "acks": "-1"},
        "producer.",
    )
    assert producer.arguments == {
        "compression_type": "zstd",
        "linger_ms": 20,
        "max_batch_size": 65536,
        "acks": "all",
    }
    consumer = client_config(
        Client.CONSUMER,
        {"fetch.max.wait.ms": "100", "auto.offset.reset": "latest", "group.id": "connect-x"},
        "consumer.override.",
    )
    assert consumer.arguments == {
        "fetch_max_wait_ms": 100,
        "auto_offset_reset": "latest",
        "group_id": "connect-x",
    }
    assert client_config(Client.PRODUCER, {"compression.type": "none"}, "").arguments == {
        "compression_type": None
    }


def test_the_connector_s_overrides_win_over_the_worker_s_settings() -> None:
    worker = {"producer.linger.ms": "50", "producer.compression.type": "lz4", "consumer.x": "1"}
    connector = {"producer.override.linger.ms": "0", "consumer.override.fetch.min.bytes": "2"}
    chosen = merged(Client.PRODUCER, {k: v for k, v in worker.items() if "x" not in k}, connector)
    assert chosen.arguments == {"linger_ms": 0, "compression_type": "lz4"}


@pytest.mark.parametrize(
    ("client", "key", "value", "says"),
    [
        (Client.CONSUMER, "linger.ms", "1", "a setting of the producer, not the consumer"),
        (Client.ADMIN, "max.poll.records", "1", "a setting of the consumer, not the admin"),
        (Client.PRODUCER, "buffer.memory", "1", "headrace's Kafka clients have no such setting"),
        (Client.PRODUCER, "enable.idempotence", "false", "a retried send never duplicates"),
        (Client.CONSUMER, "enable.auto.commit", "true", "never on a timer"),
        (Client.CONSUMER, "value.deserializer", "x", "through the connector's converters"),
        (Client.PRODUCER, "linger.ms", "-1", "'-1' is not a whole number of at least 0"),
        (Client.PRODUCER, "compression.type", "brotli", "is not one of none, gzip, snappy"),
        (Client.CONSUMER, "client.id", " ", "client.id: empty"),
        (Client.PRODUCER, "sasl.mechanism", "PLAIN", "a mechanism alone changes no login"),
    ],
)
def test_a_refused_key_or_value_is_named_with_the_reason(
    client: Client, key: str, value: str, says: str
) -> None:
    with pytest.raises(ConfigException) as caught:
        client_config(client, {key: value}, client.override)
    assert str(caught.value).startswith(client.override + key)
    assert says in str(caught.value)


def test_a_login_override_reads_the_jaas_config_as_kafka_does() -> None:
    jaas = f'{SCRAM} required username="svc-orders" password="p;a=s\\"s";'
    chosen = client_config(
        Client.PRODUCER, {"sasl.jaas.config": jaas, "sasl.mechanism": "SCRAM-SHA-512"}, ""
    )
    assert chosen.login == Login("SCRAM-SHA-512", "svc-orders", 'p;a=s"s')
    assert "p;a" not in repr(chosen.login)


@pytest.mark.parametrize(
    ("jaas", "mechanism", "says"),
    [
        ("com.example.Login required user=a;", None, "not a login module headrace's clients"),
        (f"{SCRAM} optional username=a password=b;", None, "flag must be required"),
        (f"{SCRAM} required username=a;", None, "the login has no password"),
        (f"{SCRAM} required username=a password=b;", "PLAIN", "SCRAM-SHA-512, not PLAIN"),
        ("nothing", None, "not a JAAS login"),
    ],
)
def test_a_login_headrace_cannot_make_is_refused(
    jaas: str, mechanism: str | None, says: str
) -> None:
    with pytest.raises(ConfigException, match=r"^p\.sasl\.jaas\.config: ") as caught:
        parse_login("p.sasl.jaas.config", jaas, mechanism)
    assert says in str(caught.value)


@given(
    st.sampled_from(sorted(KEYS) + sorted(OWNED)),
    st.sampled_from(list(Client)),
    st.sampled_from(["None", "Principal", "All", "Allowlist"]),
    st.text(min_size=1, max_size=8),
)
def test_an_override_is_either_taken_as_its_client_takes_it_or_refused_by_name(
    key: str, client: Client, policy: str, value: str
) -> None:
    config = {client.override + key: value}
    try:
        refuse_overrides(config, policy, frozenset({key}))
    except ConfigException as exc:
        assert str(exc).startswith(client.override + key + ": ")
        return
    # Let through: the policy allowed it, and the client takes it with this value.
    assert policy in ("All", "Allowlist") or key in ("security.protocol",)
    assert key in KEYS and client in KEYS[key].clients
    argument = client_config(client, {key: value}, client.override).arguments
    assert list(argument) == [KEYS[key].argument]


def test_a_connector_without_converters_takes_the_worker_s_with_their_keys() -> None:
    worker = {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "producer.linger.ms": "5",
    }
    mine = {"connector.class": "File", "key.converter": "json", "value.converter.x": "1"}
    assert with_worker_converters(mine, worker) == {
        **mine,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    assert with_worker_converters(mine, {}) is mine
