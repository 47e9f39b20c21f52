package headrace.jvm;

import com.google.protobuf.ByteString;
import headrace.connect.DeletionAware;
import headrace.v1.Jvm.Acknowledged;
import headrace.v1.Jvm.Header;
import headrace.v1.Jvm.JvmStartTaskRequest;
import headrace.v1.Jvm.PollResponse;
import headrace.v1.Jvm.ProducedRecord;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.source.TransactionContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/**
 * A running source task: each poll's records transformed and converted to the bytes Connect
 * would write, each kept until Kafka acknowledged it, for {@code commitRecord}.
 */
final class SourceRun {
    private final SourceTask task;
    private final Pipeline pipeline;
    private final Plugins plugins;
    private final ClassLoader loader;
    private final TaskParts parts;
    private final Map<Long, SourceRecord> outstanding = new HashMap<>();
    private final Boundaries boundaries = new Boundaries();
    private long next;

    private SourceRun(TaskParts parts) {
        this.parts = parts;
        this.task = (SourceTask) parts.task();
        this.pipeline = parts.pipeline();
        this.plugins = parts.plugins();
        this.loader = parts.loader();
    }

    static SourceRun start(Location location, JvmStartTaskRequest request) {
        SourceRun run = new SourceRun(TaskParts.of(location, request, true));
        Map<String, String> config = request.getTaskConfigMap();
        OffsetStorageReader reader = new SnapshotReader(request.getOffsetsList());
        PluginMetrics metrics = run.parts.metrics();
        TransactionContext transactions = request.getTransactions() ? run.boundaries : null;
        try (LoaderSwap swap = run.plugins.withClassLoader(run.loader)) {
            run.task.initialize(new SourceTaskContext() {
                @Override
                public Map<String, String> configs() {
                    return config;
                }

                @Override
                public OffsetStorageReader offsetStorageReader() {
                    return reader;
                }

                @Override
                public TransactionContext transactionContext() {
                    return transactions;
                }

                @Override
                public PluginMetrics pluginMetrics() {
                    return metrics;
                }
            });
            run.task.start(config);
        } catch (RuntimeException e) {
            run.pipeline.close();
            throw e;
        }
        return run;
    }

    synchronized PollResponse poll() throws InterruptedException {
        List<SourceRecord> polled;
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            polled = task.poll();
        }
        PollResponse.Builder response = PollResponse.newBuilder();
        if (polled == null) {
            return boundaries.endOfPoll(response).build();
        }
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            for (SourceRecord record : polled) {
                long id = next++;
                outstanding.put(id, record);
                ProducedRecord.Builder out = ProducedRecord.newBuilder()
                        .setPolled(id)
                        .setTopic(record.topic() == null ? "" : record.topic())
                        .setSourcePartition(Json.write(record.sourcePartition()))
                        .setSourceOffset(Json.write(record.sourceOffset()))
                        .setCommitAfter(boundaries.commitAfter(record))
                        .setAbortAfter(boundaries.abortAfter(record));
                try {
                    SourceRecord transformed = pipeline.transform(record);
                    if (transformed == null) {
                        out.setDropped(true);
                    } else {
                        encode(out, transformed, pipeline.produce(transformed));
                    }
                } catch (Pipeline.StageFailure failure) {
                    if (!pipeline.tolerateAll) {
                        return PollResponse.newBuilder()
                                .setFailed(Failures.record(-1, failure, record.topic()).toBuilder()
                                        .setSourcePartition(out.getSourcePartition()))
                                .build();
                    }
                    out.setFailure(Failures.record(-1, failure, record.topic()).toBuilder()
                            .setSourcePartition(out.getSourcePartition()));
                }
                response.addRecords(out);
            }
        }
        return boundaries.endOfPoll(response).build();
    }

    private static void encode(ProducedRecord.Builder out, SourceRecord record, Pipeline.Produced bytes) {
        out.setTopic(record.topic());
        if (record.kafkaPartition() != null) {
            out.setPartition(record.kafkaPartition());
        }
        if (bytes.key() != null) {
            out.setKey(ByteString.copyFrom(bytes.key()));
        }
        if (bytes.value() != null) {
            out.setValue(ByteString.copyFrom(bytes.value()));
        }
        if (record.timestamp() != null && record.timestamp() >= 0) {
            out.setTimestamp(record.timestamp());
        }
        for (org.apache.kafka.common.header.Header header : bytes.headers()) {
            Header.Builder h = Header.newBuilder().setKey(header.key());
            if (header.value() != null) {
                h.setValue(ByteString.copyFrom(header.value()));
            }
            out.addHeaders(h);
        }
    }

    /** commitRecord for each acknowledged (or dropped) record, then commit() if asked. */
    synchronized void commit(List<Acknowledged> acknowledged, boolean commit) throws InterruptedException {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            for (Acknowledged ack : acknowledged) {
                SourceRecord record = outstanding.remove(ack.getPolled());
                if (record == null) {
                    continue; // told twice (a retried call)
                }
                RecordMetadata metadata = ack.getWritten()
                        ? new RecordMetadata(
                                new TopicPartition(ack.getTopic(), ack.getPartition()),
                                ack.getOffset(), 0, ack.getTimestamp(), -1, -1)
                        : null;
                task.commitRecord(record, metadata);
            }
            if (commit) {
                task.commit();
            }
        }
    }

    void stop(boolean deleted) {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            if (task instanceof DeletionAware aware) {
                aware.stop(deleted);
            } else {
                task.stop();
            }
        } finally {
            pipeline.close();
        }
    }

    /** The task's TransactionContext: what it asked, given back with the records of a poll. */
    private static final class Boundaries implements TransactionContext {
        private final Map<SourceRecord, Boolean> commits = new IdentityHashMap<>();
        private final Map<SourceRecord, Boolean> aborts = new IdentityHashMap<>();
        private boolean commitRequested;
        private boolean abortRequested;

        @Override
        public synchronized void commitTransaction() {
            commitRequested = true;
        }

        @Override
        public synchronized void commitTransaction(SourceRecord record) {
            commits.put(record, true);
        }

        @Override
        public synchronized void abortTransaction() {
            abortRequested = true;
        }

        @Override
        public synchronized void abortTransaction(SourceRecord record) {
            aborts.put(record, true);
        }

        synchronized boolean commitAfter(SourceRecord record) {
            return commits.remove(record) != null;
        }

        synchronized boolean abortAfter(SourceRecord record) {
            return aborts.remove(record) != null;
        }

        synchronized PollResponse.Builder endOfPoll(PollResponse.Builder response) {
            response.setCommitRequested(commitRequested).setAbortRequested(abortRequested);
            commitRequested = false;
            abortRequested = false;
            return response;
        }
    }
}
