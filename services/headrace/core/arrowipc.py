"""Arrow tables as the bytes the executor's calls carry: one IPC stream per table."""

from __future__ import annotations

import pyarrow as pa


def ipc_stream(table: pa.Table) -> bytes:
    """The table as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_stream(data: bytes) -> pa.Table:
    """The rows of an Arrow IPC stream."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
