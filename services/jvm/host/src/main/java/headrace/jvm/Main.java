package headrace.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * The JVM plugin host of one plugin location (a jar, or a folder of jars, as Kafka Connect's
 * plugin.path takes them), run by a Python plugin process.
 *
 * <pre>
 *   java -jar headrace-jvm-host.jar --location PATH --scan
 *   java -jar headrace-jvm-host.jar --location PATH --socket PATH
 * </pre>
 *
 * <p>With {@code --scan} it prints the plugins the location holds, one per line ({@code type},
 * class, version and the jar the class is in, tab-separated), and exits. Otherwise it reads the
 * key every call must carry from the first line of its standard input, and serves {@code
 * JvmPluginHost} on the Unix socket until that input closes: the Python process that started it
 * holds that pipe, so the JVM never outlives it, even when it is killed. It exits 3 when the location
 * cannot be loaded.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = options(args);
        Path location = Path.of(required(options, "--location"));
        Location loaded;
        try {
            loaded = Location.load(location);
        } catch (RuntimeException | IOException e) {
            System.err.println("cannot load plugin location " + location + ": " + e);
            System.exit(3);
            return;
        }
        if (options.containsKey("--scan")) {
            PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
            for (Location.Found plugin : loaded.plugins()) {
                out.println(String.join("\t", plugin.type(), plugin.className(), plugin.version(), plugin.source()));
            }
            System.exit(0);
        }
        Path socket = Path.of(required(options, "--socket"));
        watchThreads(Integer.getInteger(MAX_THREADS_PROPERTY, DEFAULT_MAX_THREADS));
        // The first line of its input is the key every call must carry: never on its command
        // line or in its environment, which other processes of its user may read.
        String key = firstLine(System.in);
        Files.deleteIfExists(socket);
        HostServer server = HostServer.start(socket, new HostService(loaded), key);
        System.err.println("jvm_host_ready " + socket);
        // The parent holds our stdin: its end (the parent exiting, however) ends this process.
        while (System.in.read() != -1) {
            // nothing is ever written; a read returns only at the end
        }
        server.stop();
        System.exit(0);
    }

    /** The JVM's bound on its live threads, a system property ({@code -Dheadrace.max.threads}). */
    static final String MAX_THREADS_PROPERTY = "headrace.max.threads";

    static final int DEFAULT_MAX_THREADS = 1024;

    /** The exit code of a JVM that ended itself for holding more threads than its bound. */
    static final int THREADS_EXCEEDED = 75;

    /**
     * Ends this JVM once it holds more than {@code most} live threads: no JVM option bounds a
     * plugin's threads, and each holds memory (its stack) the heap's bound does not count. The
     * Python process sees the JVM go, and fails its units, as for an OutOfMemoryError.
     */
    private static void watchThreads(int most) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Thread watch = new Thread(() -> {
            while (true) {
                int live = threads.getThreadCount();
                if (live > most) {
                    System.err.println("jvm_threads_exceeded: " + live + " live threads, more than "
                            + most + " (" + MAX_THREADS_PROPERTY + ")");
                    System.err.flush();
                    Runtime.getRuntime().halt(THREADS_EXCEEDED);
                }
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "headrace-thread-watch");
        watch.setDaemon(true);
        watch.start();
    }

    /** One line of {@code in}, without its newline, reading no byte past it. */
    private static String firstLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        int read;
        while ((read = in.read()) != -1 && read != '\n') {
            line.append((char) read);
        }
        return line.toString().strip();
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--scan")) {
                options.put("--scan", "");
            } else if (i + 1 < args.length && args[i].startsWith("--")) {
                options.put(args[i], args[++i]);
            } else {
                throw new IllegalArgumentException("unexpected argument " + args[i]);
            }
        }
        return options;
    }

    private static String required(Map<String, String> options, String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException(name + " is required");
        }
        return value;
    }
}
