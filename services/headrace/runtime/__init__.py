"""The task runner that lives in plugin processes, and the plugin host process itself.

| module | role |
| --- | --- |
| ``host`` | ``python -m headrace.runtime.host``: the process entry point |
| ``service`` | the ``PluginHost`` gRPC edge (protobuf <-> domain calls) |
| ``hosted`` | the connectors and tasks of the one plugin version in this process |
| ``units`` | one connector or task and its bounded lifecycle |
| ``events`` | unit state changes, fanned out to ``Watch`` streams |
| ``source``, ``sink`` | the task loops that do the Kafka I/O |
| ``sinkrecords`` | pure parts of the sink loop |
| ``offsets`` | the source offsets topic protocol and reader |
| ``converters`` | JSON, string and bytes converters |
| ``errors`` | ``errors.tolerance`` and the dead letter queue |
| ``kafka``, ``lifecycle``, ``loader`` | topic creation, asyncio helpers, plugin import |
"""
