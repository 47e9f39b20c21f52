"""What a failed call to one of headrace's services says: its status code."""

from __future__ import annotations

import grpc


def rpc_code(error: grpc.RpcError) -> grpc.StatusCode:
    """The status of a failed call (its RpcError is also its ``grpc.Call``)."""
    code = getattr(error, "code", None)
    return code() if callable(code) else grpc.StatusCode.UNKNOWN


def is_not_found(error: grpc.RpcError) -> bool:
    """Whether a failed call failed because what it named does not exist."""
    return bool(rpc_code(error) == grpc.StatusCode.NOT_FOUND)
