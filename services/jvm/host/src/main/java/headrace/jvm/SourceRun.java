package headrace.jvm;

import com.google.protobuf.ByteString;
import headrace.connect.DeletionAware;
import headrace.v1.Jvm.Acknowledged;
import headrace.v1.Jvm.Header;
import headrace.v1.Jvm.JvmStartTaskRequest;
import headrace.v1.Jvm.PollResponse;
import headrace.v1.Jvm.ProducedBatch;
import headrace.v1.Jvm.ProducedRecord;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
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
 * would write, each kept until Kafka acknowledged it, for {@code commitRecord} (when the task
 * has one of its own).
 *
 * <p>The task polls one batch ahead, on a thread of its own: while the worker writes a batch to
 * Kafka, the next one is polled, as Connect's task thread polls again while its producer sends.
 * A batch polled ahead and never asked for (the task stopped) is not written, and its offsets
 * are not stored, so it is polled again when the task next starts.
 */
final class SourceRun {
    private final SourceTask task;
    private final Pipeline pipeline;
    private final Plugins plugins;
    private final ClassLoader loader;
    private final TaskParts parts;
    private final boolean commitsRecords;
    private final Map<Long, SourceRecord> outstanding = new ConcurrentHashMap<>();
    private final Boundaries boundaries = new Boundaries();
    private final ExecutorService poller;
    private Future<PollResponse> ahead; // guarded by this
    private boolean stopping; // guarded by this
    private long next; // the poller's

    private SourceRun(TaskParts parts, String unit) {
        this.parts = parts;
        this.task = (SourceTask) parts.task();
        this.pipeline = parts.pipeline();
        this.plugins = parts.plugins();
        this.loader = parts.loader();
        this.commitsRecords = commitsRecords(task.getClass());
        this.poller = Executors.newSingleThreadExecutor(body -> {
            Thread thread = new Thread(body, "poll " + unit);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Whether the task has a commitRecord of its own: SourceTask's does nothing. Kafka 4 took
     * away the one-argument form, so each form counts only where the API still has it. */
    static boolean commitsRecords(Class<?> taskClass) {
        return overrides(taskClass, SourceRecord.class, RecordMetadata.class)
                || overrides(taskClass, SourceRecord.class);
    }

    private static boolean overrides(Class<?> taskClass, Class<?>... parameters) {
        try {
            return taskClass.getMethod("commitRecord", parameters).getDeclaringClass() != SourceTask.class;
        } catch (NoSuchMethodException e) {
            return false; // not in this version of the API, so not the task's either
        }
    }

    boolean commitsRecords() {
        return commitsRecords;
    }

    static SourceRun start(Location location, JvmStartTaskRequest request) {
        String unit = request.getConnector() + "-" + request.getTask();
        SourceRun run = new SourceRun(TaskParts.of(location, request, true), unit);
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
            run.poller.shutdown();
            run.pipeline.close();
            throw e;
        }
        return run;
    }

    /** The batch polled ahead (or, the first time and after a failure, polled now); the next
     * one is then polled ahead. */
    PollResponse poll() throws InterruptedException {
        Future<PollResponse> batch;
        synchronized (this) {
            batch = ahead != null ? ahead : poller.submit(this::pollOnce);
            ahead = null;
        }
        PollResponse response;
        try {
            response = batch.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw new IllegalStateException(e.getCause());
        }
        synchronized (this) {
            if (!stopping && !response.hasFailed()) {
                ahead = poller.submit(this::pollOnce);
            }
        }
        return response;
    }

    private PollResponse pollOnce() throws InterruptedException {
        List<SourceRecord> polled;
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            polled = task.poll();
        }
        PollResponse.Builder response = PollResponse.newBuilder();
        if (polled == null) {
            return boundaries.endOfPoll(response).build();
        }
        List<Outcome> outcomes = new ArrayList<>(polled.size());
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            for (SourceRecord record : polled) {
                long id = next++;
                if (commitsRecords) {
                    outstanding.put(id, record);
                }
                SourceRecord transformed = null;
                Pipeline.Produced produced = null;
                Pipeline.StageFailure failed = null;
                try {
                    transformed = pipeline.transform(record);
                    if (transformed != null) {
                        produced = pipeline.produce(transformed);
                    }
                } catch (Pipeline.StageFailure failure) {
                    if (!pipeline.tolerateAll) {
                        return PollResponse.newBuilder()
                                .setFailed(Failures.record(-1, failure, record.topic()).toBuilder()
                                        .setSourcePartition(Json.write(record.sourcePartition())))
                                .build();
                    }
                    failed = failure;
                }
                outcomes.add(new Outcome(
                        id, record, transformed, produced, failed,
                        boundaries.commitAfter(record), boundaries.abortAfter(record)));
            }
        }
        ProducedBatch columns = commitsRecords ? null : asBatch(outcomes);
        if (columns != null) {
            response.setBatch(columns);
        } else {
            for (Outcome outcome : outcomes) {
                response.addRecords(outcome.record());
            }
        }
        return boundaries.endOfPoll(response).build();
    }

    /** What became of one polled record: transformed and converted, dropped, or failed. */
    private record Outcome(
            long id, SourceRecord polled, SourceRecord transformed, Pipeline.Produced produced,
            Pipeline.StageFailure failure, boolean commitAfter, boolean abortAfter) {

        ProducedRecord.Builder record() {
            ProducedRecord.Builder out = ProducedRecord.newBuilder()
                    .setPolled(id)
                    .setTopic(polled.topic() == null ? "" : polled.topic())
                    .setSourcePartition(Json.write(polled.sourcePartition()))
                    .setSourceOffset(Json.write(polled.sourceOffset()))
                    .setCommitAfter(commitAfter)
                    .setAbortAfter(abortAfter);
            if (failure != null) {
                out.setFailure(Failures.record(-1, failure, polled.topic()).toBuilder()
                        .setSourcePartition(out.getSourcePartition()));
            } else if (transformed == null) {
                out.setDropped(true);
            } else {
                encode(out, transformed, produced);
            }
            return out;
        }
    }

    /**
     * The poll as columns, with the last record's offset (JSON once), or null when something
     * sets a record apart: all must be of one source partition, for one topic and Kafka
     * partition; none dropped or failed or ending a transaction; none with headers or a null
     * value; keys and timestamps on all or on none. The first record's facts are read once.
     */
    private static ProducedBatch asBatch(List<Outcome> outcomes) {
        if (outcomes.isEmpty() || outcomes.get(0).produced() == null) {
            return null;
        }
        Outcome first = outcomes.get(0);
        SourceRecord head = first.transformed();
        Object sourcePartition = first.polled().sourcePartition();
        boolean keyed = first.produced().key() != null;
        boolean stamped = stamped(head);
        for (Outcome outcome : outcomes) {
            SourceRecord record = outcome.transformed();
            Pipeline.Produced produced = outcome.produced();
            if (produced == null
                    || outcome.commitAfter()
                    || outcome.abortAfter()
                    || produced.value() == null
                    || produced.headers().iterator().hasNext()
                    || (produced.key() != null) != keyed
                    || stamped(record) != stamped
                    || !record.topic().equals(head.topic())
                    || !Objects.equals(record.kafkaPartition(), head.kafkaPartition())
                    || !Objects.equals(outcome.polled().sourcePartition(), sourcePartition)) {
                return null;
            }
        }
        ProducedBatch.Builder batch = ProducedBatch.newBuilder()
                .setTopic(head.topic())
                .setSourcePartition(Json.write(first.polled().sourcePartition()))
                .setSourceOffset(Json.write(outcomes.get(outcomes.size() - 1).polled().sourceOffset()));
        if (head.kafkaPartition() != null) {
            batch.setPartition(head.kafkaPartition());
        }
        for (Outcome outcome : outcomes) {
            Pipeline.Produced produced = outcome.produced();
            batch.addValues(ByteString.copyFrom(produced.value()));
            if (keyed) {
                batch.addKeys(ByteString.copyFrom(produced.key()));
            }
            if (stamped) {
                batch.addTimestamps(outcome.transformed().timestamp());
            }
        }
        return batch.build();
    }

    private static boolean stamped(SourceRecord record) {
        return record.timestamp() != null && record.timestamp() >= 0;
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
        if (stamped(record)) {
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

    /** Stops the task; a poll under way (asked for or ahead) is given a moment to end, as
     * stop() asks of it, before the converters and transformations close. */
    void stop(boolean deleted) {
        synchronized (this) {
            stopping = true;
        }
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            if (task instanceof DeletionAware aware) {
                aware.stop(deleted);
            } else {
                task.stop();
            }
        } finally {
            poller.shutdown();
            try {
                poller.awaitTermination(STOP_WAIT_S, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                pipeline.close();
            }
        }
    }

    private static final long STOP_WAIT_S = 5;

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
