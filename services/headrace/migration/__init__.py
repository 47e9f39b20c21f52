"""Moving connectors between Kafka Connect and headrace, and back, with their source offsets and
sink positions: ``headrace migrate`` (``__main__``), and the config service's migrations for
automation (``operations``, served over REST and gRPC by ``api``). Both sides answer Kafka
Connect's REST API (``connect``); what would move is planned from their answers (``plan``), and
each connector moves in steps read anew from both sides every time (``cutover``), one after
another (``moving``)."""
