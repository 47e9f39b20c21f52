package headrace.jvm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.components.ConnectPlugin;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.storage.Converter;

/**
 * The keys of the converters, transformations and predicates a connector config names, under
 * their prefixes ({@code transforms.route.regex}), as Connect adds them to a connector's
 * definition when it validates a config: each component is made as a task's would be, at the
 * version its {@code .plugin.version} asks, and asked for its {@code config()}.
 */
final class ComponentKeys {
    /** A converter's role, which the runtime sets (key, value or header), as Connect does. */
    private static final String CONVERTER_TYPE = "converter.type";

    /** Keys the framework reads or sets (a converter's role), not the component's own. */
    private static final Set<String> FRAMEWORK =
            Set.of("type", "predicate", "negate", "plugin.version", CONVERTER_TYPE);

    /** A component a config names: the prefix of its keys, the key naming it, and its class. */
    record Named(String prefix, String key, String className) {}

    /** One of a component's keys under its prefix, with its value's verdict when validated. */
    record Key(String name, ConfigDef.ConfigKey definition, org.apache.kafka.common.config.ConfigValue value) {}

    private ComponentKeys() {}

    /** The components a config names, in Connect's order; converters only where named. */
    static List<Named> named(Map<String, String> config) {
        List<Named> named = new ArrayList<>();
        for (String at : List.of("key.converter", "value.converter", "header.converter")) {
            String name = config.getOrDefault(at, "").trim();
            if (!name.isEmpty()) {
                named.add(new Named(at + ".", at, name));
            }
        }
        for (String namespace : List.of("transforms", "predicates")) {
            for (String alias : Pipeline.list(config.get(namespace))) {
                String at = namespace + "." + alias;
                named.add(new Named(at + ".", at + ".type", config.getOrDefault(at + ".type", "").trim()));
            }
        }
        return named;
    }

    /**
     * The keys of one named component, each validated against the config unless only the
     * definition is asked for. Throws the component's error (its naming key) when it cannot be
     * made.
     */
    static List<Key> of(Plugins plugins, ClassLoader loader, Map<String, String> config, Named named,
                        boolean definitionOnly) {
        if (named.className().isEmpty()) {
            throw new Pipeline.ComponentError(named.key(), "is required");
        }
        ConfigDef definition;
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            String versionAt = named.prefix().substring(0, named.prefix().length() - 1);
            Object made = Pipeline.newPlugin(plugins, named.className(), config, versionAt, named.key());
            try {
                definition = definitionOf(made);
            } finally {
                Pipeline.closeQuietly(made);
            }
        }
        Map<String, org.apache.kafka.common.config.ConfigValue> values = new HashMap<>();
        if (!definitionOnly) {
            Map<String, String> own = new HashMap<>();
            config.forEach((k, v) -> {
                if (k.startsWith(named.prefix()) && !FRAMEWORK.contains(k.substring(named.prefix().length()))) {
                    own.put(k.substring(named.prefix().length()), v);
                }
            });
            if (named.key().endsWith(".converter")) {
                own.put(CONVERTER_TYPE, named.key().substring(0, named.key().indexOf('.')));
            }
            for (org.apache.kafka.common.config.ConfigValue value : definition.validate(own)) {
                values.put(value.name(), value);
            }
        }
        List<Key> keys = new ArrayList<>();
        definition.configKeys().forEach((name, key) -> {
            if (!FRAMEWORK.contains(name)) {
                keys.add(new Key(named.prefix() + name, key, values.get(name)));
            }
        });
        return keys;
    }

    private static ConfigDef definitionOf(Object component) {
        ConfigDef definition = null;
        if (component instanceof Converter converter) {
            definition = converter.config();
        } else if (component instanceof ConnectPlugin plugin) {
            definition = plugin.config();
        }
        return definition == null ? new ConfigDef() : definition;
    }
}
