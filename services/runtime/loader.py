"""Imports a plugin version the way its manifest says (see ``headrace.core.plugins``).

The version folder goes first on ``sys.path`` and ``module`` is imported from it; ``attribute``
(dotted for a nested name) is the connector class. Only ever one plugin version per process.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from headrace.core.plugins import PluginDescriptor, PluginError
from headrace.sdk.connector import Connector, SinkConnector, SourceConnector


def load_connector_class(descriptor: PluginDescriptor) -> type[Connector]:
    """The connector class of one plugin version; PluginError when it is not a fitting one."""
    folder = str(descriptor.folder)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.import_module(descriptor.module)
    found: Any = module
    for part in descriptor.attribute.split("."):
        found = getattr(found, part, None)
    expected = SourceConnector if descriptor.type == "source" else SinkConnector
    if not (isinstance(found, type) and issubclass(found, expected)):
        raise PluginError(
            f"{descriptor.manifest}: {descriptor.module}.{descriptor.attribute} is not a "
            f"{expected.__name__} subclass"
        )
    return found
