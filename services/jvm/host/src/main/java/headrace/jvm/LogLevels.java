package headrace.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.runtime.Loggers;

/**
 * KIP-976's cluster log levels in this JVM, applied with Connect's own {@link Loggers} over
 * log4j2: a level names a logger namespace (or {@code root}) and reaches every logger under it,
 * the connectors' own among them, as on a Connect worker.
 */
final class LogLevels {
    private final Loggers loggers = Loggers.newInstance(Time.SYSTEM);
    private Map<String, String> held = Map.of();

    /**
     * Sets each namespace to its level, parents before their children, unless these are the
     * levels already held; the loggers whose level this set. A level log4j does not know
     * leaves its namespace as it is ({@code WARNING} is taken as {@code WARN}).
     */
    synchronized List<String> hold(Map<String, String> levels) {
        if (levels.equals(held)) {
            return List.of();
        }
        Map<String, String> sorted = new TreeMap<>();
        levels.forEach((name, level) -> {
            String upper = level.strip().toUpperCase(Locale.ROOT);
            sorted.put(name, upper.equals("WARNING") ? "WARN" : upper);
        });
        List<String> changed = new ArrayList<>();
        sorted.forEach((name, level) -> {
            if (loggers.isValidLevel(level)) {
                changed.addAll(loggers.setLevel(name, level));
            }
        });
        held = Map.copyOf(levels);
        return changed;
    }
}
