"""What every service shares, by concern.

| package | what |
| --- | --- |
| ``model`` | the vocabulary, the topics' events and their pure folds, protobuf <-> domain |
| ``storage`` | the topic log (Kafka, in memory), the cluster's topics, the stores |
| ``security`` | roles, tokens, TLS, the gRPC guard, the session key, secrets, Kafka logins |
| ``observability`` | JSON logs, Prometheus metrics, gRPC health and reflection |

Beside them: ``settings`` (read from the environment), ``rpc`` (limits and addresses every
channel shares), ``runner`` (a service process's server and signals), ``arrowipc``.
Nothing in ``core`` imports a service, ``runtime``, ``components`` or ``isolation``.
"""
