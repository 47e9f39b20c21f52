"""Developer tooling, apart from the user's ``headrace`` command: the embedded Kafka broker
(``kafka``), the whole stack on this machine as separate processes (``stack``), the demo pipeline
``make run`` shows (``demo``), the protobuf code generator (``protogen``), the Chromium the
console's browser tests drive (``chromium``), and ``python -m headrace.local kafka|stack`` that
drives them (``commands``)."""
