"""The task runner that lives in plugin processes, and the plugin host process itself.

| module | role |
| --- | --- |
| ``host`` | ``python -m headrace.runtime.host``: the process entry point |
| ``service`` | the ``PluginHost`` gRPC edge (protobuf <-> domain calls) |
| ``hosted`` | the connectors and tasks of the one plugin version in this process |
| ``units`` | one connector or task and its bounded lifecycle |
| ``events`` | unit state changes (``headrace.core.structs``), fanned out to ``Watch`` streams |
| ``placement`` | where a task runs and with what: the base of both task loops |
| ``source``, ``sink`` | the task loops that do the Kafka I/O |
| ``sinkrecords``, ``sinkoffsets`` | pure parts of the sink loop: records, commit bookkeeping |
| ``executor`` | the Spark executor's client, a sink task's ``context.executor`` |
| ``converters`` | JSON, string and bytes converters |
| ``errors`` | ``errors.tolerance`` and the dead letter queue |
| ``kafka``, ``lifecycle``, ``loader`` | client settings, asyncio helpers, plugin import |

Plugins see none of this: they import ``headrace.sdk``, and reach the runtime only through the
contexts it hands them (stored offsets, commits, ``logger``, ``executor``, and ``paths``: the
folders of ``Settings.file_roots``, the only ones a path in a config may name).
"""
