"""Arrow tables as the bytes the executor's calls carry: one IPC stream per table."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


def ipc_stream(table: pa.Table) -> bytes:
    """The table as an Arrow IPC stream."""
    import pyarrow as pa  # loaded where tables are (headrace.sdk.columns)

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def read_stream(data: bytes) -> pa.Table:
    """The rows of an Arrow IPC stream."""
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
