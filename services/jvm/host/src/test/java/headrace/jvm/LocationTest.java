package headrace.jvm;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;

import headrace.jvm.fixture.ListedSource;
import headrace.jvm.fixture.UnlistedSink;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import org.apache.kafka.connect.source.SourceConnector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A plugin location scanned as Connect scans one: by its service manifests, else its classes. */
class LocationTest {
    @TempDir
    Path folder;

    /** A jar holding the classes' own bytecode and, for each entry, a service manifest. */
    private static void jar(Path file, Map<String, String> services, Class<?>... classes) throws IOException {
        try (OutputStream stream = Files.newOutputStream(file); JarOutputStream out = new JarOutputStream(stream)) {
            for (Class<?> klass : classes) {
                String name = klass.getName().replace('.', '/') + ".class";
                out.putNextEntry(new JarEntry(name));
                try (InputStream in = LocationTest.class.getClassLoader().getResourceAsStream(name)) {
                    in.transferTo(out);
                }
                out.closeEntry();
            }
            for (Map.Entry<String, String> service : services.entrySet()) {
                out.putNextEntry(new JarEntry("META-INF/services/" + service.getKey()));
                out.write((service.getValue() + "\n").getBytes(UTF_8));
                out.closeEntry();
            }
        }
    }

    @Test
    void aManifestedJarIsReadByItsManifestAndAnotherByItsClassesEachWithItsVersionAndFile() throws IOException {
        jar(folder.resolve("listed.jar"), Map.of(SourceConnector.class.getName(), ListedSource.class.getName()), ListedSource.class);
        jar(folder.resolve("unlisted.jar"), Map.of(), UnlistedSink.class);

        List<Location.Found> found = Location.load(folder).plugins();

        assertEquals(List.of(
                new Location.Found("sink", UnlistedSink.class.getName(), "0.9", "unlisted.jar"),
                new Location.Found("source", ListedSource.class.getName(), "1.2.3", "listed.jar")), found);
    }

    @Test
    void theHostsOwnPluginsAreNotTheLocations() throws IOException {
        jar(folder.resolve("listed.jar"), Map.of(SourceConnector.class.getName(), ListedSource.class.getName()), ListedSource.class);

        List<Location.Found> found = Location.load(folder).plugins();

        // Connect's converters and transformations are on the host's class path: none is listed.
        assertEquals(List.of(ListedSource.class.getName()), found.stream().map(Location.Found::className).toList());
    }
}
