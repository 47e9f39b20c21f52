package headrace.jvm;

import headrace.connect.DeletionAware;
import headrace.v1.Jvm.JvmEvent;
import headrace.v1.Jvm.SourceOffset;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/** A running connector: its instance, inside its plugin's class loader. */
final class ConnectorRun {
    final String name;
    final Map<String, String> config;
    private final Connector connector;
    private final Plugins plugins;

    private ConnectorRun(String name, Map<String, String> config, Connector connector, Plugins plugins) {
        this.name = name;
        this.config = config;
        this.connector = connector;
        this.plugins = plugins;
    }

    /** Starts the connector; a source's offset reader answers {@code offsets}, as stored when it starts. */
    static ConnectorRun start(
            Location location,
            String className,
            String name,
            Map<String, String> config,
            List<SourceOffset> offsets,
            Events events) {
        Plugins plugins = location.connect();
        Connector connector = plugins.newConnector(className);
        ConnectorRun run = new ConnectorRun(name, config, connector, plugins);
        try (LoaderSwap swap = run.swap()) {
            connector.initialize(context(name, connector, new SnapshotReader(offsets), events));
            connector.start(config);
        }
        return run;
    }

    /** The class of the connector's tasks, loaded where the connector was. */
    static Class<? extends Task> taskClass(Location location, String className) {
        Plugins plugins = location.connect();
        Connector connector = plugins.newConnector(className);
        try (LoaderSwap swap = plugins.withClassLoader(connector.getClass().getClassLoader())) {
            return connector.taskClass();
        }
    }

    LoaderSwap swap() {
        return plugins.withClassLoader(connector.getClass().getClassLoader());
    }

    List<Map<String, String>> taskConfigs(int maxTasks) {
        try (LoaderSwap swap = swap()) {
            return connector.taskConfigs(maxTasks);
        }
    }

    void stop(boolean deleted) {
        try (LoaderSwap swap = swap()) {
            if (connector instanceof DeletionAware aware) {
                aware.stop(deleted);
            } else {
                connector.stop();
            }
        }
    }

    private static SourceConnectorContext context(
            String name, Connector connector, OffsetStorageReader offsets, Events events) {
        PluginMetrics metrics = Metrics.forPlugin(Map.of("connector", name));
        return new SourceConnectorContext() {
            @Override
            public void requestTaskReconfiguration() {
                events.publish(JvmEvent.newBuilder().setConnector(name).setReconfigurationRequested(true).build());
            }

            @Override
            public void raiseError(Exception e) {
                events.publish(JvmEvent.newBuilder().setConnector(name).setError(Failures.trace(e)).build());
            }

            @Override
            public PluginMetrics pluginMetrics() {
                return metrics;
            }

            @Override
            public OffsetStorageReader offsetStorageReader() {
                if (!(connector instanceof SourceConnector)) {
                    throw new UnsupportedOperationException("a sink connector has no offset reader");
                }
                return offsets;
            }
        };
    }
}
