"""The core every service shares: the vocabulary (``structs``, ``errors``), events and their pure
folds (``configstate``/``configlog``, ``status``, ``offsets`` for source positions), the topic
log and its in-memory twin (``topiclog``), the cluster's topics, settings, logging, and gRPC
plumbing (``rpc``, ``wire``, ``runner``), and the plugin processes (``supervisor``)."""
