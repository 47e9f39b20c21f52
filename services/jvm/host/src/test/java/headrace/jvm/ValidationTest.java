package headrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import headrace.v1.Configdef.ConfigInfo;
import headrace.v1.Configdef.ConfigInfos;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.source.SourceConnector;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A connector's own keys, as Connect's REST API describes them. */
class ValidationTest {
    private static Plugins plugins;

    /** A connector with a required key and a password. */
    public static final class Guarded extends SourceConnector {
        @Override
        public ConfigDef config() {
            return new ConfigDef()
                    .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where to")
                    .define("password", ConfigDef.Type.PASSWORD, "",
                            ConfigDef.Importance.HIGH, "a secret");
        }

        @Override public void start(Map<String, String> props) {}
        @Override public Class<? extends Task> taskClass() { return null; }
        @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(); }
        @Override public void stop() {}
        @Override public String version() { return "1.0"; }
    }

    @BeforeAll
    static void plugins() {
        plugins = new Plugins(Map.of());
    }

    private static ConfigInfo key(ConfigInfos infos, String name) {
        return infos.getConfigsList().stream()
                .filter(c -> c.getValue().getName().equals(name)).findFirst().orElseThrow();
    }

    @Test
    void aMissingRequiredKeyIsAnErrorOfThatKeyAndAPasswordIsNeverEchoed() {
        ConfigInfos infos = Validation.infos(new Guarded(), Map.of("password", "s3cret"), false, plugins);
        assertEquals(1, infos.getErrorCount());
        assertEquals(Guarded.class.getName(), infos.getName());
        assertFalse(key(infos, "topic").getValue().getErrorsList().isEmpty());
        assertFalse(key(infos, "password").getValue().getHasValue());
        assertFalse(infos.toString().contains("s3cret"));
    }

    @Test
    void theDefinitionAloneListsEveryKeyWithoutErrors() {
        ConfigInfos infos = Validation.infos(new Guarded(), Map.of(), true, plugins);
        assertEquals(0, infos.getErrorCount());
        assertEquals("PASSWORD", key(infos, "password").getDefinition().getType());
        assertTrue(key(infos, "topic").getDefinition().getRequired());
    }
}
