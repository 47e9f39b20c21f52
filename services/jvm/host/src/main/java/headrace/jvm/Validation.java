package headrace.jvm;

import headrace.v1.Configdef.ConfigInfo;
import headrace.v1.Configdef.ConfigInfos;
import headrace.v1.Configdef.ConfigKeyInfo;
import headrace.v1.Configdef.ConfigValueInfo;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A connector's own keys as Connect's REST API describes them: its {@code config()} definition
 * and, unless only the definition is asked for, what its {@code validate()} says of a config.
 * A PASSWORD key's value never leaves the JVM.
 */
final class Validation {
    private Validation() {}

    /**
     * The connector's keys; unless only the definition is asked for, also whether the
     * converters, transformations and predicates the config names can be made and configured
     * here, as Connect's worker would make them for its tasks (an error of the key at fault).
     */
    static ConfigInfos infos(
            Connector connector, Map<String, String> config, boolean definitionOnly, Plugins plugins) {
        ConfigDef definition = connector.config();
        Map<String, ConfigDef.ConfigKey> keys = definition.configKeys();
        ConfigInfos.Builder infos = ConfigInfos.newBuilder()
                .setName(connector.getClass().getName())
                .addAllGroups(definition.groups());
        int errors = 0;
        if (definitionOnly) {
            for (ConfigDef.ConfigKey key : keys.values()) {
                infos.addConfigs(ConfigInfo.newBuilder()
                        .setDefinition(key(key))
                        .setValue(ConfigValueInfo.newBuilder().setName(key.name).setVisible(true)));
            }
            errors += componentKeys(connector, config, plugins, true, infos);
        } else {
            Config validated = connector.validate(config);
            for (ConfigValue value : validated.configValues()) {
                ConfigDef.ConfigKey key = keys.get(value.name());
                ConfigInfo.Builder info = ConfigInfo.newBuilder().setValue(value(value, key));
                info.setDefinition(key == null ? ConfigKeyInfo.newBuilder().setName(value.name()).build() : key(key));
                infos.addConfigs(info);
                errors += value.errorMessages().size();
            }
            int componentErrors = componentKeys(connector, config, plugins, false, infos);
            errors += componentErrors;
            // Each made and its keys valid: configured as a task's would be, the first refusal.
            Pipeline.ComponentError problem =
                    componentErrors == 0 ? components(connector, config, plugins) : null;
            if (problem != null) {
                infos.addConfigs(error(problem, config));
                errors += 1;
            }
        }
        return infos.setErrorCount(errors).build();
    }

    /**
     * Adds the keys of the components the config names, under their prefixes, as Connect's
     * validation does, each checked by its definition unless only that is asked for; a
     * component that cannot be made is an error of the key naming it. Returns the errors added.
     */
    private static int componentKeys(
            Connector connector, Map<String, String> config, Plugins plugins, boolean definitionOnly,
            ConfigInfos.Builder infos) {
        int errors = 0;
        ClassLoader loader = connector.getClass().getClassLoader();
        for (ComponentKeys.Named named : ComponentKeys.named(config)) {
            try {
                for (ComponentKeys.Key key : ComponentKeys.of(plugins, loader, config, named, definitionOnly)) {
                    ConfigKeyInfo definition = key(key.definition()).toBuilder().setName(key.name()).build();
                    ConfigValueInfo.Builder value = key.value() == null
                            ? ConfigValueInfo.newBuilder().setVisible(true)
                            : value(key.value(), key.definition()).toBuilder();
                    infos.addConfigs(ConfigInfo.newBuilder()
                            .setDefinition(definition)
                            .setValue(value.setName(key.name())));
                    errors += value.getErrorsCount();
                }
            } catch (Pipeline.ComponentError e) {
                infos.addConfigs(error(e, config));
                errors += 1;
            }
        }
        return errors;
    }

    private static ConfigInfo error(Pipeline.ComponentError problem, Map<String, String> config) {
        return ConfigInfo.newBuilder()
                .setDefinition(ConfigKeyInfo.newBuilder().setName(problem.key).setType("STRING"))
                .setValue(ConfigValueInfo.newBuilder()
                        .setName(problem.key)
                        .setValue(config.getOrDefault(problem.key, ""))
                        .setHasValue(config.containsKey(problem.key))
                        .addErrors(problem.getMessage())
                        .setVisible(true))
                .build();
    }

    /** The first converter, transformation or predicate of the config that cannot be made. */
    private static Pipeline.ComponentError components(
            Connector connector, Map<String, String> config, Plugins plugins) {
        boolean source = connector instanceof SourceConnector;
        try (Pipeline made = Pipeline.of(plugins, connector.getClass().getClassLoader(), config, source)) {
            return null;
        } catch (Pipeline.ComponentError e) {
            return e;
        }
    }

    private static ConfigKeyInfo key(ConfigDef.ConfigKey key) {
        ConfigKeyInfo.Builder info = ConfigKeyInfo.newBuilder()
                .setName(key.name)
                .setType(key.type.name())
                .setRequired(!key.hasDefault())
                .setHasDefault(key.hasDefault())
                .setImportance(key.importance == null ? "" : key.importance.name())
                .setDocumentation(key.documentation == null ? "" : key.documentation)
                .setGroup(key.group == null ? "" : key.group)
                .setOrderInGroup(key.orderInGroup)
                .setWidth(key.width == null ? "NONE" : key.width.name())
                .setDisplayName(key.displayName == null ? key.name : key.displayName)
                .addAllDependents(key.dependents == null ? List.of() : key.dependents);
        if (key.hasDefault() && key.defaultValue != null) {
            info.setDefaultValue(ConfigDef.convertToString(key.defaultValue, key.type));
        }
        return info.build();
    }

    private static ConfigValueInfo value(ConfigValue value, ConfigDef.ConfigKey key) {
        ConfigValueInfo.Builder info = ConfigValueInfo.newBuilder()
                .setName(value.name())
                .setVisible(value.visible())
                .addAllErrors(value.errorMessages());
        Object raw = value.value();
        boolean secret = raw instanceof Password || (key != null && key.type == ConfigDef.Type.PASSWORD);
        if (raw != null && !secret) {
            info.setValue(key == null ? raw.toString() : ConfigDef.convertToString(raw, key.type));
            info.setHasValue(true);
        }
        for (Object recommended : value.recommendedValues()) {
            info.addRecommendedValues(key == null
                    ? String.valueOf(recommended)
                    : ConfigDef.convertToString(recommended, key.type));
        }
        return info.build();
    }
}
