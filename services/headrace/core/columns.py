"""pyarrow columns, recognised without loading pyarrow.

Loading pyarrow (with numpy) costs a process about 40 MiB resident. A column can only be
pyarrow's once pyarrow is loaded, so code that takes a column of either kind asks ``is_arrow``
and imports pyarrow only where it makes a column: a process that never meets one (a Java
plugin's, a worker, the config service) never loads it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import pyarrow as pa


def is_arrow(column: Any) -> TypeGuard[pa.Array]:
    """Whether ``column`` is a pyarrow Array (never, while pyarrow is not loaded)."""
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(column, arrow.Array)
