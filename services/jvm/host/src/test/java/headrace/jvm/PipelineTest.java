package headrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A connector's converters and transformations, made and run as Connect's worker runs them. */
class PipelineTest {
    private static Plugins plugins;

    @BeforeAll
    static void plugins() {
        plugins = new Plugins(Map.of());  // the host's own class path: Connect's built-in plugins
    }

    private static Pipeline of(Map<String, String> config) {
        return Pipeline.of(plugins, PipelineTest.class.getClassLoader(), config, true);
    }

    @Test
    void aSourceRecordIsTransformedThenConvertedToTheBytesConnectWouldWrite() {
        Map<String, String> config = new HashMap<>();
        config.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        config.put("value.converter", Pipeline.JSON);
        config.put("value.converter.schemas.enable", "false");
        config.put("transforms", "mark");
        config.put("transforms.mark.type", "org.apache.kafka.connect.transforms.InsertField$Value");
        config.put("transforms.mark.static.field", "origin");
        config.put("transforms.mark.static.value", "lines");
        try (Pipeline pipeline = of(config)) {
            SourceRecord record = new SourceRecord(
                    Map.of("file", "a"), Map.of("position", 3L), "t", null,
                    Schema.STRING_SCHEMA, "k", null, new HashMap<>(Map.of("line", "one")));
            Pipeline.Produced produced = pipeline.produce(pipeline.transform(record));
            assertEquals("k", new String(produced.key(), StandardCharsets.UTF_8));
            String value = new String(produced.value(), StandardCharsets.UTF_8);
            assertTrue(value.contains("\"line\":\"one\"") && value.contains("\"origin\":\"lines\""), value);
        }
    }

    @Test
    void aConverterThatCannotBeMadeIsAnErrorOfTheKeyThatNamesIt() {
        Pipeline.ComponentError error = assertThrows(
                Pipeline.ComponentError.class, () -> of(Map.of("value.converter", "no.such.Converter")));
        assertEquals("value.converter", error.key);
    }

    @Test
    void aListOfNamesIsReadAsConnectReadsIt() {
        assertEquals(java.util.List.of("a", "b"), Pipeline.list(" a , b ,"));
        assertEquals(Map.of("x", "1"), Pipeline.withPrefix(Map.of("p.x", "1", "q.y", "2"), "p."));
    }
}
