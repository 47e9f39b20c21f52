"""Internal calls signed with the session key: what is accepted, and what is refused."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState, SessionKey, SessionKeyCreated, fold
from headrace.core.security import sessionkey
from headrace.core.security.sessionkey import MAX_SKEW_MS, refusal, sign

NOW = 1_700_000_000_000
OLD, PREVIOUS, LATEST = (SessionKey(bytes([i]) * 32, NOW - 3000 + i) for i in range(3))


def meta(key: SessionKey, body: bytes, at: int = NOW) -> dict[str, str]:
    return dict(sign(key, body, at))


@given(st.binary())
def test_a_call_signed_with_the_latest_or_the_previous_key_passes(body: bytes) -> None:
    for key in (LATEST, PREVIOUS):
        assert refusal((PREVIOUS, LATEST), body, meta(key, body), NOW) is None


@given(st.binary(min_size=1), st.data())
def test_a_changed_body_is_refused(body: bytes, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(body) - 1))
    changed = body[:i] + bytes([body[i] ^ 1]) + body[i + 1 :]
    assert "matches none" in str(refusal((LATEST,), changed, meta(LATEST, body), NOW))


def test_a_key_two_rotations_old_is_refused() -> None:
    assert "matches none" in str(refusal((OLD, PREVIOUS, LATEST), b"x", meta(OLD, b"x"), NOW))


def test_an_unsigned_call_is_refused() -> None:
    assert "not signed" in str(refusal((LATEST,), b"x", {}, NOW))
    assert "not signed" in str(refusal((LATEST,), b"x", {sessionkey.SIGNATURE: "ab"}, NOW))


def test_a_signature_made_too_long_ago_is_refused_so_a_captured_call_cannot_be_replayed() -> None:
    late = NOW + MAX_SKEW_MS + 1
    assert "ms from this service's clock" in str(refusal((LATEST,), b"x", meta(LATEST, b"x"), late))
    assert refusal((LATEST,), b"x", meta(LATEST, b"x"), NOW + MAX_SKEW_MS) is None


def test_a_key_is_due_when_there_is_none_or_the_latest_has_outlived_its_time() -> None:
    assert sessionkey.due((), NOW)
    assert not sessionkey.due((LATEST,), LATEST.created_ms + 999, ttl_ms=1000)
    assert sessionkey.due((LATEST,), LATEST.created_ms + 1000, ttl_ms=1000)


def test_the_fold_keeps_the_two_latest_keys_whatever_connectors_come_and_go() -> None:
    records = [
        configlog.session_key(OLD),
        configlog.connector_configured("c", {"connector.class": "X"}, "i"),
        configlog.session_key(PREVIOUS),
        *configlog.deletion("c", 0),
        configlog.session_key(LATEST),
    ]
    events = [e for k, v in records if (e := configlog.decode(k, v)) is not None]
    state = fold(events)
    assert state.session_keys == (PREVIOUS, LATEST)
    assert state == fold(events[3:], fold(events[:3], ConfigState()))
    assert isinstance(events[-1], SessionKeyCreated)
