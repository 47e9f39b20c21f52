package headrace.jvm;

import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarFile;
import org.apache.kafka.connect.runtime.isolation.ClassLoaderFactory;
import org.apache.kafka.connect.runtime.isolation.PluginClassLoader;
import org.apache.kafka.connect.runtime.isolation.PluginDesc;
import org.apache.kafka.connect.runtime.isolation.PluginDiscoveryMode;
import org.apache.kafka.connect.runtime.isolation.PluginScanResult;
import org.apache.kafka.connect.runtime.isolation.PluginSource;
import org.apache.kafka.connect.runtime.isolation.PluginUtils;
import org.apache.kafka.connect.runtime.isolation.Plugins;

/**
 * One plugin location loaded as Kafka Connect loads it: its own isolated class loader, its
 * plugins found through their {@code META-INF/services} entries and by scanning the classes of
 * jars that have none (KIP-898's hybrid discovery), their versions from {@code version()}.
 * Connect's own converters, transformations and predicates come from the host's class path.
 */
final class Location {
    /**
     * A plugin the location holds, with the type named as headrace names it, and the file its
     * class was loaded from (a jar's name).
     */
    record Found(String type, String className, String version, String source) {}

    private final Plugins plugins;
    private final PluginScanResult found;

    private Location(Plugins plugins, PluginScanResult found) {
        this.plugins = plugins;
        this.found = found;
    }

    /**
     * Connect's plugins with an empty plugin path, found on the host's class path through their
     * service manifests alone (Kafka's own jars all have them; scanning their classes would take
     * seconds), then this one location in a class loader of its own: its plugins found through
     * their service manifests (KIP-898), and by scanning the classes of the jars that have no
     * manifest for a Connect plugin type.
     */
    static Location load(Path location) throws IOException {
        Path empty = Files.createTempDirectory("plugin-path");
        Plugins plugins =
                new Plugins(Map.of("plugin.path", empty.toString(), "plugin.discovery", "service_load"));
        PluginSource source = PluginUtils.isolatedPluginSource(
                location.toRealPath(), plugins.delegatingLoader(), new ClassLoaderFactory());
        PluginScanResult listed = plugins.initLoaders(Set.of(source), PluginDiscoveryMode.SERVICE_LOAD);
        URL[] bare = Arrays.stream(source.urls()).filter(url -> !hasManifest(url)).toArray(URL[]::new);
        if (bare.length == 0) {
            return new Location(plugins, listed);
        }
        PluginSource unlisted = new PluginSource(source.location(), source.type(), source.loader(), bare);
        PluginScanResult scanned = plugins.initLoaders(Set.of(unlisted), PluginDiscoveryMode.ONLY_SCAN);
        return new Location(plugins, new PluginScanResult(List.of(listed, scanned)));
    }

    /** Whether a jar names a Connect plugin in its {@code META-INF/services}. */
    private static boolean hasManifest(URL url) {
        try (JarFile jar = new JarFile(Path.of(url.toURI()).toFile())) {
            return jar.stream().anyMatch(e -> e.getName().startsWith("META-INF/services/org.apache.kafka."));
        } catch (IOException | URISyntaxException | IllegalArgumentException e) {
            return false; // a folder of classes, or not a jar: scanned
        }
    }

    /** Connect's view of the location: its class loaders and how it makes plugins. */
    Plugins connect() {
        return plugins;
    }

    /** The plugins of this location (not those of the host's class path), in a stable order. */
    List<Found> plugins() {
        List<Found> found = new ArrayList<>();
        add(found, "source", this.found.sourceConnectors());
        add(found, "sink", this.found.sinkConnectors());
        add(found, "converter", this.found.converters());
        add(found, "header_converter", this.found.headerConverters());
        add(found, "transformation", this.found.transformations());
        add(found, "predicate", this.found.predicates());
        found.sort(Comparator.comparing(Found::type).thenComparing(Found::className));
        return found;
    }

    /**
     * Adds the plugins whose classes this location's class loader loaded: not those it found
     * through a service manifest of a jar it holds, such as Connect's API, that Connect's rules
     * load from the host (they are the host's plugins, listed once, with the host).
     */
    private static void add(List<Found> found, String type, Collection<? extends PluginDesc<?>> descs) {
        for (PluginDesc<?> desc : descs) {
            Class<?> klass = desc.pluginClass();
            if (!(klass.getClassLoader() instanceof PluginClassLoader)) {
                continue;
            }
            CodeSource source = klass.getProtectionDomain().getCodeSource();
            String file = source == null || source.getLocation() == null
                    ? ""
                    : Path.of(source.getLocation().getPath()).getFileName().toString();
            found.add(new Found(type, desc.className(), desc.version(), file));
        }
    }
}
