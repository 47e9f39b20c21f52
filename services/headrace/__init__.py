"""headrace: a connector runtime in the spirit of Kafka Connect. One folder per service."""

import os

# gRPC's fork handlers are for a process that forks and goes on running gRPC in the child.
# headrace's processes only fork to exec another program (plugin hosts, Spark's JVM), often from
# a thread that is serving a call while others poll: there the handlers are skipped half-way and
# can close the parent's own poller under it, and the child (Spark's gateway) dies before it
# starts. Set before any gRPC use in the process; an operator's own value wins.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
