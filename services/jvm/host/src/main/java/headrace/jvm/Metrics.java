package headrace.jvm;

import java.util.Map;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;

/** The metrics registry a plugin may add to (KIP-877); kept in the JVM, not exported. */
final class Metrics {
    private static final org.apache.kafka.common.metrics.Metrics REGISTRY =
            new org.apache.kafka.common.metrics.Metrics();

    private Metrics() {}

    static PluginMetrics forPlugin(Map<String, String> tags) {
        return new PluginMetricsImpl(REGISTRY, tags);
    }
}
