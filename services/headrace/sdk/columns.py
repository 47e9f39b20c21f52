"""pyarrow columns made from Python values without loading pandas, and recognised without loading
pyarrow.

``pyarrow.array`` asks of every Python sequence it is given whether it is one of pandas's
objects, and so loads pandas on its first call: about 55 MiB resident in every process that
makes one column, and a quarter of a second on the way. The columns a task makes of messages
(bytes, text, offsets, timestamps) are built here from their buffers instead, which pyarrow takes
as they are.

Loading pyarrow (with numpy) costs a process about 40 MiB resident. A column can only be
pyarrow's once pyarrow is loaded, so code that takes a column of either kind asks ``is_arrow``
and imports pyarrow only where it makes or reads one: a process that never meets a column (a
Java plugin's, a worker, the config service and its validation processes) never loads it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, cast

if TYPE_CHECKING:
    import pyarrow as pa

MAX_OFFSET = 2**31 - 1
"""The most bytes a binary column (32-bit offsets) holds; past it, a large binary one."""


def is_arrow(column: Any) -> TypeGuard[pa.Array]:
    """Whether ``column`` is a pyarrow Array (never, while pyarrow is not loaded)."""
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(column, arrow.Array)


def binary_column(data: Sequence[bytes | bytearray | None]) -> pa.Array:
    """``data`` as a binary column (large binary past 2 GiB), None as null."""
    import numpy as np
    import pyarrow as pa

    count = len(data)
    nulls = data.count(None)
    if nulls == count:  # keys, mostly
        return pa.nulls(count, pa.binary())
    validity = None
    if nulls:
        present = [d for d in data if d is not None]
        valid = np.fromiter((d is not None for d in data), np.bool_, count)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        lengths = np.fromiter((0 if d is None else len(d) for d in data), np.int64, count)
    else:
        present = cast("list[bytes | bytearray]", data)  # no None in it
        lengths = np.fromiter(map(len, present), np.int64, count)
    offsets = np.zeros(count + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = bool(offsets[-1] > MAX_OFFSET)
    kind = pa.large_binary() if large else pa.binary()
    positions = offsets if large else offsets.astype(np.int32)
    return pa.Array.from_buffers(
        kind,
        count,
        [validity, pa.py_buffer(positions), pa.py_buffer(b"".join(present))],
        null_count=nulls,
    )


def string_column(data: Sequence[bytes | bytearray | None]) -> pa.Array:
    """UTF-8 ``data`` as a string column, None as null; ``pyarrow.ArrowInvalid`` for bytes that
    are not UTF-8, checked in native code."""
    import pyarrow as pa

    binary = binary_column(data)
    text = pa.large_string() if pa.types.is_large_binary(binary.type) else pa.string()
    return binary.cast(text)


def int64_column(values: Sequence[int]) -> pa.Array:
    """Whole numbers as an int64 column, without nulls."""
    import numpy as np
    import pyarrow as pa

    numbers = np.fromiter(values, np.int64, len(values))
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(numbers)])
