package headrace.testing;

import headrace.connect.DeletionAware;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/** The recording source's task: see {@link RecordingSourceConnector}. */
public final class RecordingSourceTask extends SourceTask implements DeletionAware {
    private final List<byte[]> kept = new ArrayList<>();
    private Map<String, String> config;
    private int task;
    private long next;
    private long records;
    private int allocate;
    private int batchSize;
    private long pollMs;

    @Override
    public void start(Map<String, String> props) {
        config = props;
        task = Integer.parseInt(props.getOrDefault("task.number", "0"));
        records = Long.parseLong(props.getOrDefault("records", "0"));
        allocate = Integer.parseInt(props.getOrDefault("allocate.mb", "0"));
        batchSize = Integer.parseInt(props.getOrDefault("batch.size", "100"));
        pollMs = Long.parseLong(props.getOrDefault("poll.ms", "0"));
        Map<String, Object> offset = context.offsetStorageReader().offset(partition());
        next = offset == null ? 0 : (Long) offset.get("next");
        Lifecycle.record(config.get("path"), "task", config.get("name"), task, "start", null);
    }

    private Map<String, Object> partition() {
        return Map.of("task", task);
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        if (kept.size() < allocate) {
            kept.add(new byte[1024 * 1024]);
        }
        if (next >= records) {
            Thread.sleep(50);
            return null;
        }
        if (pollMs > 0) {
            Thread.sleep(pollMs);
        }
        List<SourceRecord> batch = new ArrayList<>();
        while (next < records && batch.size() < batchSize) {
            batch.add(new SourceRecord(partition(), Map.of("next", next + 1), config.get("topic"),
                    null, Schema.STRING_SCHEMA, "{\"task\": " + task + ", \"n\": " + next + "}"));
            next++;
        }
        return batch;
    }

    @Override
    public void stop() {
        throw new IllegalStateException("a DeletionAware task gets stop(deleted)");
    }

    @Override
    public void stop(boolean deleted) {
        Lifecycle.record(config.get("path"), "task", config.get("name"), task, "stop", deleted);
    }

    @Override
    public String version() {
        return "1.0.0";
    }
}
