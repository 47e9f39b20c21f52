#!/bin/sh
# The image's entrypoint, installed as `headrace-service`:
#
#   headrace-service config|coordinator|worker|executor [FLAGS...]
#       runs that service in the foreground (`python -m headrace.<service> FLAGS...`);
#   headrace-service health
#       the image's HEALTHCHECK: the gRPC health check of the service this container runs, on
#       127.0.0.1 and the port of that service's address setting (a service in a container
#       listens on that port, on every interface; the manifests do so, and a test checks it);
#   headrace-service COMMAND [ARGS...]
#       anything else runs as given (`headrace get connectors`, `sh`).
#
# A HEALTHCHECK runs in a process of its own, with only the container's environment to go on,
# so the service started here is noted in a file for it.
set -eu

marker=/tmp/headrace-service

case "${1:-help}" in
config | coordinator | worker | executor)
    printf '%s\n' "$1" >"$marker" || echo "headrace-service: cannot write $marker" >&2
    service="$1"
    shift
    exec python -m "headrace.$service" "$@"
    ;;
health)
    service="$(cat "$marker" 2>/dev/null || true)"
    # Readiness where the service has it: the API's name turns SERVING once the service answers
    # from current state (a coordinator: while it leads). A worker serves only the server's.
    case "$service" in
    config)
        address="${HEADRACE_CONFIG_ADDR:-127.0.0.1:50051}"
        name=headrace.v1.ConfigService
        ;;
    coordinator)
        address="${HEADRACE_COORDINATOR_ADDR:-127.0.0.1:50052}"
        address="${address%%,*}"
        name=headrace.v1.Coordinator
        ;;
    executor)
        address="${HEADRACE_EXECUTOR_ADDR:-127.0.0.1:50053}"
        name=headrace.v1.Executor
        ;;
    worker)
        address="${HEADRACE_WORKER_ADDR:-127.0.0.1:50054}"
        name=""
        ;;
    *)
        echo "headrace-service health: no service was started in this container" >&2
        exit 1
        ;;
    esac
    # Under TLS the certificate names the service as others reach it (the host of its address
    # setting), not loopback; a wildcard host leaves loopback's own name.
    server_name="${address%:*}"
    if [ "$server_name" = 0.0.0.0 ] || [ "$server_name" = "[::]" ]; then
        server_name=127.0.0.1
    fi
    exec headrace probe "127.0.0.1:${address##*:}" --server-name "$server_name" --service "$name"
    ;;
help | -h | --help)
    echo "usage: headrace-service config|coordinator|worker|executor [FLAGS...]"
    echo "       headrace-service health"
    echo "       headrace-service COMMAND [ARGS...]   (headrace get connectors, sh, ...)"
    ;;
*)
    exec "$@"
    ;;
esac
