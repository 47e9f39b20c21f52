"""What runs inside a plugin process: the plugin host and the task loops around the plugin's code.

| package or module | role |
| --- | --- |
| ``host`` | the process (``python -m headrace.runtime.host``), its gRPC edge, its units |
| ``source`` | the source task loop: poll, convert, produce in transactions, store offsets |
| ``sink`` | the sink task loop: consume, convert, put, flush, commit the group's offsets |
| ``executor`` | the Spark executor's client, a sink task's ``context.executor`` |
| ``placement`` | where a task runs and with what: the base of both task loops |
| ``deadletter`` | the dead letter queue a sink task writes skipped records to |
| ``topicids`` | which topic a name means (KIP-516 ids) |
| ``kafka``, ``lifecycle``, ``watchdog`` | client settings, asyncio helpers, plugin call bounds |

Converters, transforms, predicates and the error and retry policies are the component library
(``headrace.components``), shared with the services. Plugins see none of this: they import
``headrace.sdk``, and reach the runtime only through the contexts it hands them (stored offsets,
commits, ``logger``, ``executor``, and ``paths``: the folders of ``Settings.file_roots``, the only
ones a path in a config may name). No service imports this package.
"""
