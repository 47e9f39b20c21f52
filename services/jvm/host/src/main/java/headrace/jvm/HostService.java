package headrace.jvm;

import headrace.v1.Configdef.ConfigInfos;
import headrace.v1.Jvm.CapabilitiesRequest;
import headrace.v1.Jvm.CapabilitiesResponse;
import headrace.v1.Jvm.CommitRequest;
import headrace.v1.Jvm.CommitResponse;
import headrace.v1.Jvm.JavaPlugin;
import headrace.v1.Jvm.JvmAlterOffsetsRequest;
import headrace.v1.Jvm.JvmAlterOffsetsResponse;
import headrace.v1.Jvm.JvmEvent;
import headrace.v1.Jvm.JvmStartConnectorRequest;
import headrace.v1.Jvm.JvmStartConnectorResponse;
import headrace.v1.Jvm.JvmStartTaskRequest;
import headrace.v1.Jvm.JvmStartTaskResponse;
import headrace.v1.Jvm.JvmStopRequest;
import headrace.v1.Jvm.JvmStopResponse;
import headrace.v1.Jvm.JvmTaskConfig;
import headrace.v1.Jvm.JvmValidateRequest;
import headrace.v1.Jvm.JvmWatchRequest;
import headrace.v1.Jvm.LogLevelsRequest;
import headrace.v1.Jvm.LogLevelsResponse;
import headrace.v1.Jvm.PartitionsRequest;
import headrace.v1.Jvm.PartitionsResponse;
import headrace.v1.Jvm.PollRequest;
import headrace.v1.Jvm.PollResponse;
import headrace.v1.Jvm.PreCommitRequest;
import headrace.v1.Jvm.PreCommitResponse;
import headrace.v1.Jvm.PutRequest;
import headrace.v1.Jvm.PutResponse;
import headrace.v1.Jvm.ScanRequest;
import headrace.v1.Jvm.ScanResponse;
import headrace.v1.JvmPluginHostGrpc;
import io.grpc.stub.StreamObserver;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.source.ConnectorTransactionBoundaries;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * {@code JvmPluginHost}: the gRPC edge over the location's connectors and tasks. The Python
 * process serialises the calls for each unit; a call for a unit not running here is
 * INVALID_ARGUMENT, and the plugin's own exception is UNKNOWN with its trace.
 */
final class HostService extends JvmPluginHostGrpc.JvmPluginHostImplBase {
    private final Location location;
    private final Events events = new Events();
    private final LogLevels levels = new LogLevels();
    private final Map<String, ConnectorRun> connectors = new ConcurrentHashMap<>();
    private final Map<String, SourceRun> sources = new ConcurrentHashMap<>();
    private final Map<String, SinkRun> sinks = new ConcurrentHashMap<>();

    HostService(Location location) {
        this.location = location;
    }

    private static String unit(String connector, int task) {
        return connector + "-" + task;
    }

    private static <T> void answer(StreamObserver<T> out, Callable<T> body) {
        T result;
        try {
            result = body.call();
        } catch (Throwable e) { // any plugin failure, reported with its trace
            out.onError(Failures.status(e));
            return;
        }
        out.onNext(result);
        out.onCompleted();
    }

    private static <T> T found(Map<String, T> units, String unit) {
        T run = units.get(unit);
        if (run == null) {
            throw new Failures.UnknownUnit(unit);
        }
        return run;
    }

    @Override
    public void scan(ScanRequest request, StreamObserver<ScanResponse> out) {
        answer(out, () -> {
            ScanResponse.Builder response = ScanResponse.newBuilder();
            for (Location.Found plugin : location.plugins()) {
                response.addPlugins(JavaPlugin.newBuilder()
                        .setClassName(plugin.className()).setType(plugin.type()).setVersion(plugin.version()));
            }
            return response.build();
        });
    }

    @Override
    public void validate(JvmValidateRequest request, StreamObserver<ConfigInfos> out) {
        answer(out, () -> {
            Connector connector = location.connect().newConnector(request.getConnectorClass());
            try (LoaderSwap swap = location.connect().withClassLoader(connector.getClass().getClassLoader())) {
                return Validation.infos(
                        connector, request.getConfigMap(), request.getDefinitionOnly(), location.connect());
            }
        });
    }

    /**
     * KIP-875: a new instance of the connector class is asked to alter (or, with null offsets,
     * reset) the offsets of a stopped connector before the framework writes them, as Connect's
     * worker asks it. What it threw is answered, not raised: the Python side words the refusal
     * as Connect does.
     */
    @Override
    public void alterOffsets(JvmAlterOffsetsRequest request, StreamObserver<JvmAlterOffsetsResponse> out) {
        answer(out, () -> {
            Connector connector = location.connect().newConnector(request.getConnectorClass());
            JvmAlterOffsetsResponse.Builder response = JvmAlterOffsetsResponse.newBuilder();
            try (LoaderSwap swap = location.connect().withClassLoader(connector.getClass().getClassLoader())) {
                List<?> entries = (List<?>) Json.read(request.getOffsetsJson()).get("entries");
                boolean handled;
                if (connector instanceof SinkConnector sink) {
                    handled = sink.alterOffsets(request.getConfigMap(), sinkOffsets(entries));
                } else {
                    handled = ((SourceConnector) connector).alterOffsets(request.getConfigMap(), sourceOffsets(entries));
                }
                response.setHandled(handled);
            } catch (UnsupportedOperationException e) {
                response.setUnsupported(true).setMessage(String.valueOf(e.getMessage()));
            } catch (ConnectException e) {
                response.setConnectException(true).setMessage(String.valueOf(e.getMessage()));
            } catch (RuntimeException e) {
                response.setFailed(true).setMessage(Failures.trace(e));
            }
            return response.build();
        });
    }

    @SuppressWarnings("unchecked")
    private static Map<Map<String, ?>, Map<String, ?>> sourceOffsets(List<?> entries) {
        Map<Map<String, ?>, Map<String, ?>> offsets = new HashMap<>();
        for (Object entry : entries) {
            Map<String, Object> pair = (Map<String, Object>) entry;
            offsets.put(
                    (Map<String, ?>) Json.normalised(pair.get("partition")),
                    (Map<String, ?>) Json.normalised(pair.get("offset")));
        }
        return offsets;
    }

    @SuppressWarnings("unchecked")
    private static Map<TopicPartition, Long> sinkOffsets(List<?> entries) {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (Object entry : entries) {
            Map<String, Object> pair = (Map<String, Object>) entry;
            Map<String, Object> partition = (Map<String, Object>) pair.get("partition");
            Map<String, Object> offset = (Map<String, Object>) pair.get("offset");
            TopicPartition topicPartition = new TopicPartition(
                    (String) partition.get("kafka_topic"), ((Number) partition.get("kafka_partition")).intValue());
            offsets.put(topicPartition, offset == null ? null : ((Number) offset.get("kafka_offset")).longValue());
        }
        return offsets;
    }

    @Override
    public void capabilities(CapabilitiesRequest request, StreamObserver<CapabilitiesResponse> out) {
        answer(out, () -> {
            Connector connector = location.connect().newConnector(request.getConnectorClass());
            CapabilitiesResponse.Builder response = CapabilitiesResponse.newBuilder();
            if (connector instanceof SourceConnector source) {
                try (LoaderSwap swap = location.connect().withClassLoader(connector.getClass().getClassLoader())) {
                    ExactlyOnceSupport support = source.exactlyOnceSupport(request.getConfigMap());
                    ConnectorTransactionBoundaries boundaries =
                            source.canDefineTransactionBoundaries(request.getConfigMap());
                    response.setExactlyOnceSupport(support == null ? "" : support.name());
                    response.setTransactionBoundaries(boundaries == null ? "" : boundaries.name());
                }
            }
            return response.build();
        });
    }

    @Override
    public void startConnector(JvmStartConnectorRequest request, StreamObserver<JvmStartConnectorResponse> out) {
        answer(out, () -> {
            ConnectorRun previous = connectors.remove(request.getName());
            if (previous != null) {
                previous.stop(false);
            }
            ConnectorRun run = ConnectorRun.start(
                    location,
                    request.getConnectorClass(),
                    request.getName(),
                    request.getConfigMap(),
                    request.getOffsetsList(),
                    events);
            connectors.put(request.getName(), run);
            return taskConfigs(run, request.getMaxTasks());
        });
    }

    @Override
    public void taskConfigs(JvmStartConnectorRequest request, StreamObserver<JvmStartConnectorResponse> out) {
        answer(out, () -> taskConfigs(found(connectors, request.getName()), request.getMaxTasks()));
    }

    private static JvmStartConnectorResponse taskConfigs(ConnectorRun run, int maxTasks) {
        JvmStartConnectorResponse.Builder response = JvmStartConnectorResponse.newBuilder();
        for (Map<String, String> config : run.taskConfigs(maxTasks)) {
            response.addTasks(JvmTaskConfig.newBuilder().putAllConfig(config));
        }
        return response.build();
    }

    @Override
    public void startTask(JvmStartTaskRequest request, StreamObserver<JvmStartTaskResponse> out) {
        answer(out, () -> {
            String unit = unit(request.getConnector(), request.getTask());
            stopTask(unit, false);
            Connector connector = location.connect().newConnector(request.getConnectorClass());
            if (connector instanceof SourceConnector) {
                SourceRun run = SourceRun.start(location, request);
                sources.put(unit, run);
                return JvmStartTaskResponse.newBuilder()
                        .setCommitsRecords(run.commitsRecords())
                        .build();
            }
            sinks.put(unit, SinkRun.start(location, request));
            return JvmStartTaskResponse.getDefaultInstance();
        });
    }

    @Override
    public void stop(JvmStopRequest request, StreamObserver<JvmStopResponse> out) {
        answer(out, () -> {
            if (request.getTask() < 0) {
                ConnectorRun run = connectors.remove(request.getConnector());
                if (run != null) {
                    run.stop(request.getDeleted());
                }
            } else {
                stopTask(unit(request.getConnector(), request.getTask()), request.getDeleted());
            }
            return JvmStopResponse.getDefaultInstance();
        });
    }

    private void stopTask(String unit, boolean deleted) {
        SourceRun source = sources.remove(unit);
        if (source != null) {
            source.stop(deleted);
        }
        SinkRun sink = sinks.remove(unit);
        if (sink != null) {
            sink.stop(deleted);
        }
    }

    @Override
    public void poll(PollRequest request, StreamObserver<PollResponse> out) {
        answer(out, () -> found(sources, unit(request.getConnector(), request.getTask())).poll());
    }

    @Override
    public void commit(CommitRequest request, StreamObserver<CommitResponse> out) {
        answer(out, () -> {
            found(sources, unit(request.getConnector(), request.getTask()))
                    .commit(request.getRecordsList(), request.getCommit());
            return CommitResponse.getDefaultInstance();
        });
    }

    @Override
    public void put(PutRequest request, StreamObserver<PutResponse> out) {
        answer(out, () -> found(sinks, unit(request.getConnector(), request.getTask())).put(request));
    }

    @Override
    public void preCommit(PreCommitRequest request, StreamObserver<PreCommitResponse> out) {
        answer(out, () -> {
            SinkRun run = found(sinks, unit(request.getConnector(), request.getTask()));
            return PreCommitResponse.newBuilder()
                    .addAllOffsets(run.preCommit(request.getOffsetsList()))
                    .setRequests(run.takeRequests())
                    .build();
        });
    }

    @Override
    public void partitions(PartitionsRequest request, StreamObserver<PartitionsResponse> out) {
        answer(out, () -> {
            SinkRun run = found(sinks, unit(request.getConnector(), request.getTask()));
            run.partitions(request.getPartitionsList(), request.getClose());
            return PartitionsResponse.newBuilder().setRequests(run.takeRequests()).build();
        });
    }

    @Override
    public void watch(JvmWatchRequest request, StreamObserver<JvmEvent> out) {
        events.watch(out);
    }

    @Override
    public void setLogLevels(LogLevelsRequest request, StreamObserver<LogLevelsResponse> out) {
        answer(out, () -> LogLevelsResponse.newBuilder()
                .addAllChanged(levels.hold(request.getLevelsMap()))
                .build());
    }

    /** Every unit still running, stopped as in a shutdown (not deleted). */
    void stopAll() {
        List.copyOf(sources.keySet()).forEach(unit -> stopTask(unit, false));
        List.copyOf(sinks.keySet()).forEach(unit -> stopTask(unit, false));
        List.copyOf(connectors.values()).forEach(run -> run.stop(false));
        connectors.clear();
    }
}
