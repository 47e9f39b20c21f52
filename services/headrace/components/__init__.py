"""The component library: what a connector config names besides its connector, shared by the
config service (which checks a config), the worker (which picks the versions a process runs) and
the plugin processes (which run them). Pure code: nothing here does I/O or starts a process.

| module | what |
| --- | --- |
| ``converters`` | JSON, string and bytes converters, and the header converters |
| ``transforms`` | Connect's single message transforms and predicates, and their chain |
| ``java`` | Java's regexes, date patterns and number formats, as Connect's keys spell them |
| ``versions`` | which component versions a config names, and the built-ins (KIP-891) |
| ``extensions`` | the component classes a plugin process loaded from the plugin path |
| ``errorpolicy`` | ``errors.tolerance``, the error log and the dead letter queue's headers |
| ``retry`` | retries of calls that fail with ``RetriableError`` (``errors.retry.*``) |
| ``topiccreation`` | the settings of topics a source connector creates (KIP-158) |
| ``secretkeys`` | which keys of a config are secret, its components' included |
"""
