package headrace.jvm;

import headrace.v1.Jvm.JvmStartTaskRequest;
import java.util.Map;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.runtime.isolation.Plugins;

/** What a task is made of, as Connect's worker makes it: its instance, in its connector's class
 *  loader, with the converters and transformations of its connector's config. */
record TaskParts(Plugins plugins, ClassLoader loader, Task task, Pipeline pipeline, PluginMetrics metrics) {
    static TaskParts of(Location location, JvmStartTaskRequest request, boolean source) {
        Plugins plugins = location.connect();
        Class<? extends Task> taskClass = ConnectorRun.taskClass(location, request.getConnectorClass());
        ClassLoader loader = taskClass.getClassLoader();
        Task task = plugins.newTask(taskClass);
        Pipeline pipeline = Pipeline.of(plugins, loader, request.getConnectorConfigMap(), source);
        PluginMetrics metrics = Metrics.forPlugin(
                Map.of("connector", request.getConnector(), "task", Integer.toString(request.getTask())));
        return new TaskParts(plugins, loader, task, pipeline, metrics);
    }
}
