package headrace.testing;

import headrace.connect.DeletionAware;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A source that records its lifecycle ({@code path}: the folder of {@code lifecycle.jsonl}) and
 * produces {@code records} records {@code "n"} to {@code topic}; with {@code allocate.mb}, its
 * task allocates that much heap, a megabyte a poll, and keeps it (to exhaust a small heap). A
 * task polls {@code batch.size} records at a time, every {@code poll.ms}. It supports
 * exactly-once delivery: its offsets say exactly what it wrote. As it starts, it records what its
 * offset reader says of task 0's partition ({@code "stored <next>"}).
 */
public final class RecordingSourceConnector extends SourceConnector implements DeletionAware {
    private Map<String, String> config;

    @Override
    public void start(Map<String, String> props) {
        config = new HashMap<>(props);
        Lifecycle.record(config.get("path"), "connector", config.get("name"), null, "start", null);
        // What its offset reader says of task 0's partition as it starts: "stored <next>".
        Map<String, Object> stored = context().offsetStorageReader().offset(Map.of("task", 0));
        Lifecycle.record(config.get("path"), "connector", config.get("name"), null,
                "stored " + (stored == null ? "none" : stored.get("next")), null);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return RecordingSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> task = new HashMap<>(config);
            task.put("task.number", Integer.toString(i));
            configs.add(task);
        }
        return configs;
    }

    @Override
    public void stop() {
        throw new IllegalStateException("a DeletionAware connector gets stop(deleted)");
    }

    @Override
    public void stop(boolean deleted) {
        Lifecycle.record(config.get("path"), "connector", config.get("name"), null, "stop", deleted);
    }

    /**
     * KIP-875, as {@code alter.offsets} says: {@code handle} (true), {@code refuse} (a
     * ConnectException), {@code unsupported} (UnsupportedOperationException), else false; each
     * call recorded.
     */
    @Override
    public boolean alterOffsets(Map<String, String> props, Map<Map<String, ?>, Map<String, ?>> offsets) {
        Lifecycle.record(props.get("path"), "connector", props.get("name"), null, "alter_offsets", null);
        String answer = props.getOrDefault("alter.offsets", "");
        if (answer.equals("refuse")) {
            throw new ConnectException("the recording source keeps its offsets to itself");
        }
        if (answer.equals("unsupported")) {
            throw new UnsupportedOperationException("no");
        }
        return answer.equals("handle");
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef()
                .define("path", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where lifecycle.jsonl goes")
                .define("topic", ConfigDef.Type.STRING, "", ConfigDef.Importance.MEDIUM, "where records go")
                .define("records", ConfigDef.Type.INT, 0, ConfigDef.Range.atLeast(0), ConfigDef.Importance.LOW,
                        "how many records each task produces")
                .define("allocate.mb", ConfigDef.Type.INT, 0, ConfigDef.Importance.LOW,
                        "heap each task allocates and keeps, a megabyte a poll")
                .define("batch.size", ConfigDef.Type.INT, 100, ConfigDef.Range.atLeast(1), ConfigDef.Importance.LOW,
                        "records a poll gives at most")
                .define("poll.ms", ConfigDef.Type.LONG, 0L, ConfigDef.Range.atLeast(0), ConfigDef.Importance.LOW,
                        "how long each poll waits before it gives records")
                .define("alter.offsets", ConfigDef.Type.STRING, "", ConfigDef.Importance.LOW,
                        "what alterOffsets does: handle, refuse, unsupported or nothing")
                .define("secret", ConfigDef.Type.PASSWORD, null, ConfigDef.Importance.LOW, "never shown");
    }

    @Override
    public String version() {
        return "1.0.0";
    }
}
