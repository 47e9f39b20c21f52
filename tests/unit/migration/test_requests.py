"""A migration's request, as the API reads it and the command's options make it: what is
refused and why, and that nothing secret in it is ever shown."""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest

from headrace.migration.__main__ import parse_args
from headrace.migration.__main__ import request_of as request_of_args
from headrace.migration.moving import FROM, TO, BadRequest, Request, connect_side
from headrace.migration.operations import (
    FAILED,
    MOVED,
    MOVING,
    PLANNED,
    Operation,
    request_of,
)
from headrace.migration.plan import Move
from tests.pki import make_pki

URL = "http://connect:8083"


def test_a_request_reads_every_setting() -> None:
    request = request_of(
        {
            "to_url": URL,
            "connectors": ["a", "b"],
            "cutover": True,
            "keep": True,
            "timeout_s": 30,
            "set": {"a:db.password": "s3cret-a", "token": "t0ken-all"},
            "connect": {"username": "ops", "password": "pa55word"},
        }
    )
    assert (request.direction, request.url, request.connectors) == (TO, URL, ("a", "b"))
    assert request.cutover and request.keep and request.timeout_s == 30.0
    assert request.supplied == {"a": {"db.password": "s3cret-a"}, None: {"token": "t0ken-all"}}
    assert request.access.username == "ops" and request.access.password == "pa55word"


def test_a_plan_is_the_default_and_the_wait_has_one() -> None:
    request = request_of({"from_url": URL})
    assert request.direction == FROM and not request.cutover and not request.keep
    assert request.timeout_s == Request.timeout_s and request.connectors == ()


@pytest.mark.parametrize(
    ("body", "key", "said"),
    [
        ([], "body", "JSON object"),
        ({"from_url": URL, "dry_run": True}, "dry_run", "not a migration setting"),
        ({}, "from_url", "exactly one of from_url and to_url"),
        ({"from_url": URL, "to_url": URL}, "from_url", "exactly one"),
        ({"from_url": 8083}, "from_url", "must be a string"),
        ({"from_url": "connect:8083"}, "url", "http:// or https://"),
        ({"from_url": "ftp://connect"}, "url", "http:// or https://"),
        ({"from_url": URL, "cutover": "yes"}, "cutover", "true or false"),
        ({"from_url": URL, "connectors": "a"}, "connectors", "list of connector names"),
        ({"from_url": URL, "connectors": [""]}, "connectors", "list of connector names"),
        ({"from_url": URL, "set": {"k": 1}}, "set", "string values"),
        ({"from_url": URL, "set": {"a:": "v"}}, "set", "names no key"),
        ({"from_url": URL, "timeout_s": True}, "timeout_s", "number of seconds"),
        ({"from_url": URL, "timeout_s": -1}, "timeout_s", "not in (0, 86400]"),
        ({"from_url": URL, "connect": "ops"}, "connect", "must be an object"),
        ({"from_url": URL, "connect": {"user": "ops"}}, "connect.user", "not one of"),
        ({"from_url": URL, "connect": {"password": "p"}}, "connect.password", "without"),
        ({"from_url": URL, "connect": {"username": "a:b"}}, "connect.username", "holds a ':'"),
        (
            {"from_url": URL, "connect": {"username": "a", "token": "t"}},
            "connect.token",
            "use one of them",
        ),
        ({"from_url": URL, "connect": {"cert_pem": "x"}}, "connect.key_pem", "go together"),
        ({"from_url": URL, "worker": ["a=b"]}, "worker", "worker properties"),
        ({"to_url": URL, "worker": {"key.converter": "x"}}, "worker", "only moving from"),
        (
            {"from_url": "http://ops:pw@connect:8083", "connect": {"username": "a"}},
            "url",
            "holds a user",
        ),
    ],
)
def test_a_bad_request_is_refused_naming_its_key(body: Any, key: str, said: str) -> None:
    with pytest.raises(BadRequest) as refused:
        request_of(body)
    assert refused.value.key == key and said in str(refused.value)


def test_nothing_secret_shows_in_what_a_request_shows() -> None:
    request = request_of(
        {
            "from_url": "https://ops:url-pa55@connect:8083/",
            "set": {"db.password": "set-s3cret"},
            "connect": {"ca_pem": "", "cert_pem": "CERT", "key_pem": "key-s3cret"},
        }
    )
    assert request.shown_url == "https://connect:8083/"
    assert set(request.secrets) == {"url-pa55", "set-s3cret", "key-s3cret"}
    for secret in request.secrets:
        assert secret not in repr(request)
        assert secret not in json.dumps(Operation(request).json())


def test_kafka_connect_is_reached_with_the_credentials_given() -> None:
    basic = connect_side(request_of({"from_url": URL, "connect": {"username": "ops"}}))
    assert basic.headers["Authorization"] == "Basic " + base64.b64encode(b"ops:").decode()
    token = request_of({"from_url": URL, "connect": {"token": "t0ken"}})
    assert connect_side(token).headers["Authorization"] == "Bearer t0ken"
    in_url = connect_side(request_of({"from_url": "http://ops:pw@connect:8083"}))
    assert in_url.headers["Authorization"] == "Basic " + base64.b64encode(b"ops:pw").decode()
    assert in_url.url == URL
    plain = connect_side(request_of({"from_url": URL}))
    assert plain.headers == {} and plain.ssl is None


def test_a_ca_that_is_not_one_is_refused_naming_it() -> None:
    request = request_of({"from_url": URL, "connect": {"ca_pem": "not a certificate"}})
    with pytest.raises(BadRequest) as refused:
        connect_side(request)
    assert refused.value.key == "connect"


def test_a_client_certificate_is_loaded_and_leaves_nothing_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pki = make_pki(tmp_path / "pki")
    me = pki.issue("migrator")
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    access = {
        "ca_pem": pki.ca.read_text(),
        "cert_pem": me.cert.read_text(),
        "key_pem": me.key.read_text(),
    }
    side = connect_side(request_of({"from_url": "https://connect:8443", "connect": access}))
    assert side.ssl is not None and side.ssl.verify_mode == ssl.CERT_REQUIRED
    assert len(side.ssl.get_ca_certs()) == 1  # the CA given, beside the client certificate
    assert list(temp.iterdir()) == []  # the key was on disk only while it was loaded


def test_an_operation_says_where_each_move_stands() -> None:
    operation = Operation(request_of({"from_url": URL, "cutover": True}))
    told = operation.listener()
    told.planned([Move(name, "source", "P", "1", {}, []) for name in ("a", "b", "c")])
    told.said("a", "create it STOPPED on headrace")
    told.moved("a")
    told.said("b", "stop it on Kafka Connect")
    assert [m["state"] for m in operation.json()["moves"]] == [MOVED, MOVING, PLANNED]
    told.failed("b", "b: could not stop it")
    shown = operation.json()["moves"]
    assert [m["state"] for m in shown] == [MOVED, FAILED, PLANNED]
    assert shown[1]["steps"] == ["stop it on Kafka Connect"]
    assert shown[1]["error"] == "b: could not stop it"


def test_the_command_s_options_make_the_same_request(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("pa55word\n")
    args = parse_args(
        ["--from", URL, "--plan", "--connect-user", "ops", "--connect-password", f"@{password}"]
    )
    request = request_of_args(args)
    assert request.access.username == "ops" and request.access.password == "pa55word"
    assert request.worker is None
    properties = tmp_path / "connect-distributed.properties"
    properties.write_text(
        "# the worker\nkey.converter=org.apache.kafka.connect.storage.StringConverter\n"
    )
    args = parse_args(["--from", URL, "--plan", "--worker-properties", str(properties)])
    assert request_of_args(args).worker == {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"
    }


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--connect-cert", "{cert}"], "--connect-cert/--connect-key: "),
        (["--connect-password", "pw"], "--connect-password: given without"),
        (["--connect-password", "@{missing}"], "--connect-password: cannot read"),
        (["--timeout", "0"], "--timeout: "),
        (["--worker-properties", "{missing}"], "--worker-properties: cannot read"),
    ],
)
def test_a_bad_option_is_refused_naming_it(tmp_path: Path, options: list[str], said: str) -> None:
    (tmp_path / "cert.pem").write_text("CERT")
    paths = {"cert": tmp_path / "cert.pem", "missing": tmp_path / "missing"}
    args = parse_args(["--from", URL, "--plan", *(o.format(**paths) for o in options)])
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace("/", "/")):
        request_of_args(args)
