"""Internal calls signed with the cluster's session key, as Kafka Connect signs its internal
requests (KIP-507).

The config service keeps a random key on the configs topic (``session-key``) and replaces it once
it is older than :data:`TTL_MS`. Only readers of that topic have it, so a call signed with it
comes from one of headrace's own services. A caller signs the request's deterministic protobuf
bytes together with the time of signing; the service accepts a signature made with its latest key
or the one before (a call signed just before a rotation), made within :data:`MAX_SKEW_MS` of its
own clock (an old captured call cannot be replayed later). Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping, Sequence

from headrace.core.model.configstate import SessionKey

SIGNATURE = "x-headrace-signature"
SIGNED_AT = "x-headrace-signed-at"
TTL_MS = 60 * 60 * 1000  # Connect's inter.worker.key.ttl.ms
MAX_SKEW_MS = 5 * 60 * 1000
KEY_BYTES = 32  # HMAC-SHA256's block-sized key


def now_ms() -> int:
    """The wall clock, in ms: signatures are checked against it on another machine."""
    return time.time_ns() // 1_000_000


def new_key(now_ms: int) -> SessionKey:
    return SessionKey(secrets.token_bytes(KEY_BYTES), now_ms)


def due(keys: Sequence[SessionKey], now_ms: int, ttl_ms: int = TTL_MS) -> bool:
    """Whether a new key should be made: there is none, or the latest has outlived its time."""
    return not keys or now_ms - keys[-1].created_ms >= ttl_ms


def _mac(key: SessionKey, body: bytes, signed_at_ms: int) -> str:
    return hmac.new(key.key, b"%d\n" % signed_at_ms + body, hashlib.sha256).hexdigest()


def sign(key: SessionKey, body: bytes, now_ms: int) -> tuple[tuple[str, str], ...]:
    """The call metadata that signs ``body`` (the request's deterministic bytes)."""
    return ((SIGNATURE, _mac(key, body, now_ms)), (SIGNED_AT, str(now_ms)))


def signed_at(metadata: Mapping[str, str]) -> int:
    """When a call that passed :func:`refusal` was signed, in ms."""
    return int(metadata[SIGNED_AT])


def refusal(
    keys: Sequence[SessionKey], body: bytes, metadata: Mapping[str, str], now_ms: int
) -> str | None:
    """Why the call must be refused; None when it is signed with a valid key, in time."""
    signature, signed_at = metadata.get(SIGNATURE), metadata.get(SIGNED_AT, "")
    if signature is None or not signed_at.isdecimal():
        return "an internal call, and this one is not signed with the cluster's session key"
    if abs(now_ms - int(signed_at)) > MAX_SKEW_MS:
        return f"signed at {signed_at}, more than {MAX_SKEW_MS} ms from this service's clock"
    if not any(hmac.compare_digest(_mac(k, body, int(signed_at)), signature) for k in keys[-2:]):
        return "the signature matches none of the cluster's current session keys"
    return None
