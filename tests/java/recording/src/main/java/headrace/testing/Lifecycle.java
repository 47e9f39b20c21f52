package headrace.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Appends one JSON line per lifecycle call to {@code <path>/lifecycle.jsonl}. */
final class Lifecycle {
    private Lifecycle() {}

    static void record(String folder, String unit, String connector, Integer task, String event, Boolean deleted) {
        StringBuilder line = new StringBuilder("{\"unit\": \"").append(unit).append("\"")
                .append(", \"connector\": \"").append(connector).append("\"")
                .append(", \"event\": \"").append(event).append("\"")
                .append(", \"version\": \"1.0.0\", \"runtime\": \"java\"");
        if (task != null) {
            line.append(", \"task\": ").append(task);
        }
        if (deleted != null) {
            line.append(", \"deleted\": ").append(deleted);
        }
        line.append("}\n");
        try {
            Path path = Path.of(folder);
            Files.createDirectories(path);
            Files.writeString(path.resolve("lifecycle.jsonl"), line.toString(), StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
