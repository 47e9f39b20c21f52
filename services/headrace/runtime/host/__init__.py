"""The plugin host: one OS process per plugin version (``python -m headrace.runtime.host``).

| module | role |
| --- | --- |
| ``__main__`` | the process entry point |
| ``service`` | the ``PluginHost`` gRPC edge (protobuf <-> domain calls) |
| ``hosted`` | the connectors and tasks of the one plugin version in this process |
| ``units`` | one connector or task and its bounded lifecycle |
| ``events`` | unit state changes, fanned out to ``Watch`` streams |
| ``loader`` | imports the plugin version and the component versions it runs with |
| ``providers`` | config providers, resolved here and nowhere else |
"""
