package headrace.jvm;

import com.google.protobuf.ByteString;
import headrace.connect.DeletionAware;
import headrace.v1.Jvm.ConsumedBatch;
import headrace.v1.Jvm.ConsumedRecord;
import headrace.v1.Jvm.Header;
import headrace.v1.Jvm.JvmStartTaskRequest;
import headrace.v1.Jvm.PutRequest;
import headrace.v1.Jvm.RecordSet;
import headrace.v1.Jvm.PutResponse;
import headrace.v1.Jvm.RecordFailure;
import headrace.v1.Jvm.SinkRequests;
import headrace.v1.Jvm.TopicPartitionOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.function.IntUnaryOperator;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;

/**
 * A running sink task: consumed bytes converted and transformed as Connect does, then put; what
 * the task asks of its context (offsets, pauses, a commit) goes back with each answer.
 */
final class SinkRun {
    private final SinkTask task;
    private final Pipeline pipeline;
    private final Plugins plugins;
    private final ClassLoader loader;
    private final TaskParts parts;
    private final Set<TopicPartition> assignment = new HashSet<>();
    // The records of the put under way, and each one's index in its request: what the task
    // reports errant is looked up there (by identity: a rare path, not a map per put).
    private List<SinkRecord> putting = List.of();
    private int[] putIndexes = new int[0];
    private final List<RecordFailure> reported = new ArrayList<>();
    private SinkRequests.Builder requests = SinkRequests.newBuilder();

    private SinkRun(TaskParts parts) {
        this.parts = parts;
        this.task = (SinkTask) parts.task();
        this.pipeline = parts.pipeline();
        this.plugins = parts.plugins();
        this.loader = parts.loader();
    }

    static SinkRun start(Location location, JvmStartTaskRequest request) {
        SinkRun run = new SinkRun(TaskParts.of(location, request, false));
        Map<String, String> config = request.getTaskConfigMap();
        PluginMetrics metrics = run.parts.metrics();
        try (LoaderSwap swap = run.plugins.withClassLoader(run.loader)) {
            run.task.initialize(run.context(config, metrics));
            run.task.start(config);
        } catch (RuntimeException e) {
            run.pipeline.close();
            throw e;
        }
        return run;
    }

    private SinkTaskContext context(Map<String, String> config, PluginMetrics metrics) {
        ErrantRecordReporter reporter = this::report;
        return new SinkTaskContext() {
            @Override
            public Map<String, String> configs() {
                return config;
            }

            @Override
            public void offset(Map<TopicPartition, Long> offsets) {
                offsets.forEach(this::offset);
            }

            @Override
            public void offset(TopicPartition tp, long offset) {
                synchronized (SinkRun.this) {
                    requests.addOffsets(tpo(tp, offset));
                }
            }

            @Override
            public void timeout(long timeoutMs) {
                // Retries of a RetriableException are the Python loop's (errors.retry.*).
            }

            @Override
            public Set<TopicPartition> assignment() {
                synchronized (SinkRun.this) {
                    return Set.copyOf(assignment);
                }
            }

            @Override
            public void pause(TopicPartition... partitions) {
                synchronized (SinkRun.this) {
                    for (TopicPartition tp : partitions) {
                        requests.addPaused(tpo(tp, 0));
                    }
                }
            }

            @Override
            public void resume(TopicPartition... partitions) {
                synchronized (SinkRun.this) {
                    for (TopicPartition tp : partitions) {
                        requests.addResumed(tpo(tp, 0));
                    }
                }
            }

            @Override
            public void requestCommit() {
                synchronized (SinkRun.this) {
                    requests.setCommitRequested(true);
                }
            }

            @Override
            public ErrantRecordReporter errantRecordReporter() {
                return reporter;
            }

            @Override
            public PluginMetrics pluginMetrics() {
                return metrics;
            }
        };
    }

    /** A record the task reports errant: back to the Python loop, which skips it or fails. */
    private synchronized Future<Void> report(SinkRecord record, Throwable error) {
        int index = -1;
        for (int i = 0; i < putting.size(); i++) {
            if (putting.get(i) == record) {
                index = putIndexes[i];
                break;
            }
        }
        reported.add(Failures.record(
                index,
                new Pipeline.StageFailure("TASK_PUT", task, error),
                record.topic()));
        return CompletableFuture.completedFuture(null);
    }

    synchronized PutResponse put(PutRequest request) {
        List<Consumed> consumed = Consumed.of(request);
        PutResponse.Builder response = PutResponse.newBuilder();
        List<SinkRecord> records = new ArrayList<>(consumed.size());
        int[] indexes = new int[consumed.size()];
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            for (int i = 0; i < consumed.size(); i++) {
                Consumed in = consumed.get(i);
                try {
                    SinkRecord record = pipeline.transform(pipeline.consume(
                            in.topic(), in.partition(), in.offset(), in.key(), in.value(),
                            in.headers(), in.timestamp(), in.timestampType()));
                    if (record != null) {
                        indexes[records.size()] = i;
                        records.add(record);
                    }
                } catch (Pipeline.StageFailure failure) {
                    response.addSkipped(Failures.record(i, failure, in.topic()));
                    if (!pipeline.tolerateAll) {
                        return response.setRequests(takeRequests()).build();
                    }
                }
            }
            putting = records;
            putIndexes = indexes;
            try {
                task.put(records);
            } finally {
                putting = List.of();
            }
        }
        response.addAllSkipped(reported);
        reported.clear();
        return response.setRequests(takeRequests()).build();
    }

    /** A consumed record's bytes and place, however it crossed. */
    record Consumed(
            String topic, int partition, long offset, byte[] key, byte[] value,
            RecordHeaders headers, long timestamp, TimestampType timestampType) {

        /** A put's records in the request's order: one by one, then batch after batch, then
         * record set after record set. */
        static List<Consumed> of(PutRequest request) {
            List<Consumed> all = new ArrayList<>(request.getRecordsCount());
            for (ConsumedRecord in : request.getRecordsList()) {
                RecordHeaders headers = new RecordHeaders();
                for (Header header : in.getHeadersList()) {
                    headers.add(header.getKey(), header.hasValue() ? header.getValue().toByteArray() : null);
                }
                String type = in.getTimestampType().isEmpty() ? "NoTimestampType" : in.getTimestampType();
                all.add(new Consumed(
                        in.getTopic(), in.getPartition(), in.getOffset(),
                        in.hasKey() ? in.getKey().toByteArray() : null,
                        in.hasValue() ? in.getValue().toByteArray() : null,
                        headers, in.getTimestamp(), TimestampType.forName(type)));
            }
            for (ConsumedBatch batch : request.getBatchesList()) {
                TimestampType stamped = TimestampType.forName(batch.getTimestampType());
                Cells keys = new Cells(batch.getKeys(), batch.getKeyLengthsCount(), batch::getKeyLengths);
                Cells values = new Cells(batch.getValues(), batch.getValueLengthsCount(), batch::getValueLengths);
                for (int i = 0; i < batch.getOffsetsCount(); i++) {
                    long timestamp = batch.getTimestamps(i);
                    all.add(new Consumed(
                            batch.getTopic(), batch.getPartition(), batch.getOffsets(i),
                            keys.next(), values.next(), new RecordHeaders(),
                            timestamp < 0 ? -1 : timestamp,
                            timestamp < 0 ? TimestampType.NO_TIMESTAMP_TYPE : stamped));
                }
            }
            for (RecordSet set : request.getRecordSetsList()) {
                addRecordSet(all, set);
            }
            return all;
        }

        /** Record batches as the broker sent them, read as Kafka's consumer reads them. */
        private static void addRecordSet(List<Consumed> all, RecordSet set) {
            MemoryRecords records = MemoryRecords.readableRecords(set.getBatches().asReadOnlyByteBuffer());
            for (RecordBatch batch : records.batches()) {
                TimestampType stamped = batch.timestampType();
                try (CloseableIterator<Record> each = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
                    while (each.hasNext()) {
                        Record record = each.next();
                        long timestamp = record.timestamp();
                        all.add(new Consumed(
                                set.getTopic(), set.getPartition(), record.offset(),
                                record.hasKey() ? Utils.toArray(record.key()) : null,
                                record.hasValue() ? Utils.toArray(record.value()) : null,
                                new RecordHeaders(record.headers()),
                                timestamp < 0 ? -1 : timestamp,
                                timestamp < 0 ? TimestampType.NO_TIMESTAMP_TYPE : stamped));
                    }
                }
            }
        }
    }

    /** A batch's keys or values, one record's after another: its bytes are as long as its
     * length says (-1: null), and with no lengths every one is null. */
    /** One column's cells, copied out one at a time, their lengths read without boxing. */
    private static final class Cells {
        private final ByteString data;
        private final int count;
        private final IntUnaryOperator lengthAt;
        private int index;
        private int position;

        Cells(ByteString data, int count, IntUnaryOperator lengthAt) {
            this.data = data;
            this.count = count;
            this.lengthAt = lengthAt;
        }

        byte[] next() {
            if (count == 0) {
                return null;
            }
            int length = lengthAt.applyAsInt(index++);
            if (length < 0) {
                return null;
            }
            byte[] cell = new byte[length];
            data.copyTo(cell, position, 0, length);
            position += length;
            return cell;
        }
    }

    /** preCommit (which flushes, unless the task overrides it): the offsets it lets commit. */
    synchronized List<TopicPartitionOffset> preCommit(List<TopicPartitionOffset> offsets) {
        Map<TopicPartition, OffsetAndMetadata> current = new HashMap<>();
        for (TopicPartitionOffset o : offsets) {
            current.put(new TopicPartition(o.getTopic(), o.getPartition()), new OffsetAndMetadata(o.getOffset()));
        }
        Map<TopicPartition, OffsetAndMetadata> committable;
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            committable = task.preCommit(current);
        }
        List<TopicPartitionOffset> out = new ArrayList<>();
        if (committable != null) {
            committable.forEach((tp, om) -> out.add(tpo(tp, om.offset())));
        }
        return out;
    }

    synchronized void partitions(List<TopicPartitionOffset> partitions, boolean close) {
        Collection<TopicPartition> tps = new ArrayList<>();
        for (TopicPartitionOffset p : partitions) {
            tps.add(new TopicPartition(p.getTopic(), p.getPartition()));
        }
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            if (close) {
                task.close(tps);
                assignment.removeAll(tps);
            } else {
                assignment.addAll(tps);
                task.open(tps);
            }
        }
    }

    synchronized SinkRequests takeRequests() {
        SinkRequests taken = requests.build();
        requests = SinkRequests.newBuilder();
        return taken;
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

    private static TopicPartitionOffset tpo(TopicPartition tp, long offset) {
        return TopicPartitionOffset.newBuilder()
                .setTopic(tp.topic()).setPartition(tp.partition()).setOffset(offset).build();
    }
}
