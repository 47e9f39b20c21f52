package headrace.jvm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;
import org.apache.maven.artifact.versioning.InvalidVersionSpecificationException;
import org.apache.maven.artifact.versioning.VersionRange;

/**
 * A task's converters and transformations, made from its connector's config as Kafka Connect
 * makes them ({@code key.converter}, {@code value.converter}, {@code header.converter},
 * {@code transforms} and {@code predicates}, each with its {@code .plugin.version}), applied in
 * Connect's order: for a source, transformations then the header, key and value converters; for
 * a sink, the key, value and header converters then transformations.
 *
 * <p>A connector config that names no converter gets headrace's defaults, which the Python
 * process applies to its own connectors too: JSON without schemas for keys and values, and
 * Connect's SimpleHeaderConverter for headers.
 */
final class Pipeline implements AutoCloseable {
    static final String JSON = "org.apache.kafka.connect.json.JsonConverter";
    static final String SIMPLE_HEADERS = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

    /** A converter, transformation or predicate the config names cannot be made: the key. */
    static final class ComponentError extends org.apache.kafka.common.config.ConfigException {
        private static final long serialVersionUID = 1L;
        final String key;

        ComponentError(String key, String message) {
            super(key + ": " + message);
            this.key = key;
        }
    }

    /** A record failed a stage: which, and the class at work. */
    static final class StageFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String stage;
        final String executing;

        StageFailure(String stage, Object executing, Throwable cause) {
            super(stage + " failed: " + cause, cause);
            this.stage = stage;
            this.executing = executing.getClass().getName();
        }
    }

    private record Stage<R extends ConnectRecord<R>>(
            Transformation<R> transformation, Predicate<R> predicate, boolean negate) {
        R apply(R record) {
            if (predicate != null && predicate.test(record) == negate) {
                return record;
            }
            return transformation.apply(record);
        }
    }

    private final Converter keyConverter;
    private final Converter valueConverter;
    private final HeaderConverter headerConverter;
    private final List<Stage<SourceRecord>> sourceStages;
    private final List<Stage<SinkRecord>> sinkStages;
    private final Retries retries;
    final boolean tolerateAll;

    private Pipeline(
            Converter keyConverter,
            Converter valueConverter,
            HeaderConverter headerConverter,
            List<Stage<SourceRecord>> sourceStages,
            List<Stage<SinkRecord>> sinkStages,
            Retries retries,
            boolean tolerateAll) {
        this.keyConverter = keyConverter;
        this.valueConverter = valueConverter;
        this.headerConverter = headerConverter;
        this.sourceStages = sourceStages;
        this.sinkStages = sinkStages;
        this.retries = retries;
        this.tolerateAll = tolerateAll;
    }

    static Pipeline of(Plugins plugins, ClassLoader loader, Map<String, String> config, boolean source) {
        try (LoaderSwap swap = plugins.withClassLoader(loader)) {
            Converter key = converter(plugins, config, "key", true);
            Converter value = converter(plugins, config, "value", false);
            HeaderConverter headers = headerConverter(plugins, config);
            List<Stage<SourceRecord>> sourceStages = source ? stages(plugins, config) : List.of();
            List<Stage<SinkRecord>> sinkStages = source ? List.of() : stages(plugins, config);
            boolean all = "all".equalsIgnoreCase(config.getOrDefault("errors.tolerance", "none").trim());
            return new Pipeline(key, value, headers, sourceStages, sinkStages, Retries.of(config), all);
        }
    }

    private static Converter converter(
            Plugins plugins, Map<String, String> config, String role, boolean isKey) {
        String prefix = role + ".converter";
        String name = config.getOrDefault(prefix, "").trim();
        Map<String, Object> sub = withPrefix(config, prefix + ".");
        if (name.isEmpty()) {
            name = JSON;
            sub.putIfAbsent("schemas.enable", "false");
        }
        Converter converter = (Converter) newPlugin(plugins, name, config, prefix, prefix);
        sub.put("converter.type", isKey ? "key" : "value");
        configure(prefix, () -> converter.configure(sub, isKey));
        return converter;
    }

    private static HeaderConverter headerConverter(Plugins plugins, Map<String, String> config) {
        String prefix = "header.converter";
        String name = config.getOrDefault(prefix, "").trim();
        HeaderConverter converter =
                (HeaderConverter) newPlugin(plugins, name.isEmpty() ? SIMPLE_HEADERS : name, config, prefix, prefix);
        Map<String, Object> sub = withPrefix(config, prefix + ".");
        sub.put("converter.type", "header");
        configure(prefix, () -> converter.configure(sub));
        return converter;
    }

    @SuppressWarnings("unchecked")
    private static <R extends ConnectRecord<R>> List<Stage<R>> stages(
            Plugins plugins, Map<String, String> config) {
        List<Stage<R>> stages = new ArrayList<>();
        for (String alias : list(config.get("transforms"))) {
            String prefix = "transforms." + alias;
            Map<String, Object> sub = withPrefix(config, prefix + ".");
            Object predicateName = sub.remove("predicate");
            boolean negate = Boolean.parseBoolean(String.valueOf(sub.remove("negate")));
            String type = required(config, prefix + ".type");
            Transformation<R> transformation = (Transformation<R>) newPlugin(plugins, type, config, prefix, prefix + ".type");
            configure(prefix + ".type", () -> transformation.configure(sub));
            Predicate<R> predicate = null;
            if (predicateName != null && !predicateName.toString().isBlank()) {
                String at = "predicates." + predicateName.toString().trim();
                Predicate<R> made = (Predicate<R>) newPlugin(plugins, required(config, at + ".type"), config, at, at + ".type");
                configure(at + ".type", () -> made.configure(withPrefix(config, at + ".")));
                predicate = made;
            }
            stages.add(new Stage<>(transformation, predicate, negate));
        }
        return stages;
    }

    /** The plugin ``name`` at the version ``<at>.plugin.version`` asks; errors are ``key``'s. */
    static Object newPlugin(Plugins plugins, String name, Map<String, String> config, String at, String key) {
        String spec = config.getOrDefault(at + ".plugin.version", "").trim();
        try {
            VersionRange range =
                    spec.isEmpty() || spec.equals("latest") ? null : VersionRange.createFromVersionSpec(spec);
            return plugins.newPlugin(name, range);
        } catch (InvalidVersionSpecificationException e) {
            throw new ComponentError(at + ".plugin.version", spec + " is not a version range: " + e.getMessage());
        } catch (ClassNotFoundException e) {
            throw new ComponentError(key, "no converter, transformation or predicate named " + name + " is here");
        } catch (Exception e) {
            throw new ComponentError(key, name + " cannot be made: " + e);
        }
    }

    private static String required(Map<String, String> config, String key) {
        String value = config.getOrDefault(key, "").trim();
        if (value.isEmpty()) {
            throw new ComponentError(key, "is required");
        }
        return value;
    }

    /** Configures a component, a refusal of its config told as an error of ``key``. */
    private static void configure(String key, Runnable configure) {
        try {
            configure.run();
        } catch (RuntimeException e) {
            throw new ComponentError(key, e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    static Map<String, Object> withPrefix(Map<String, String> config, String prefix) {
        Map<String, Object> sub = new HashMap<>();
        config.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                sub.put(k.substring(prefix.length()), v);
            }
        });
        sub.remove("plugin.version");
        return sub;
    }

    static List<String> list(String value) {
        List<String> items = new ArrayList<>();
        if (value != null) {
            for (String item : value.split(",")) {
                if (!item.isBlank()) {
                    items.add(item.trim());
                }
            }
        }
        return items;
    }

    /** A source record after the transformations, or null when one dropped it. */
    SourceRecord transform(SourceRecord record) {
        return transformed(sourceStages, record);
    }

    /** A sink record after the transformations, or null when one dropped it. */
    SinkRecord transform(SinkRecord record) {
        return transformed(sinkStages, record);
    }

    private <R extends ConnectRecord<R>> R transformed(List<Stage<R>> stages, R record) {
        R current = record;
        for (Stage<R> stage : stages) {
            R input = current;
            try {
                current = retries.run(() -> stage.apply(input));
            } catch (RuntimeException e) {
                throw new StageFailure("TRANSFORMATION", stage.transformation(), e);
            }
            if (current == null) {
                return null;
            }
        }
        return current;
    }

    /** The bytes Connect would produce for a transformed source record. */
    Produced produce(SourceRecord record) {
        String topic = record.topic();
        RecordHeaders headers = new RecordHeaders();
        try {
            for (Header header : record.headers()) {
                headers.add(header.key(), retries.run(() -> headerConverter.fromConnectHeader(
                        topic, header.key(), header.schema(), header.value())));
            }
        } catch (RuntimeException e) {
            throw new StageFailure("HEADER_CONVERTER", headerConverter, e);
        }
        byte[] key;
        try {
            key = retries.run(() -> keyConverter.fromConnectData(topic, headers, record.keySchema(), record.key()));
        } catch (RuntimeException e) {
            throw new StageFailure("KEY_CONVERTER", keyConverter, e);
        }
        byte[] value;
        try {
            value = retries.run(() -> valueConverter.fromConnectData(
                    topic, headers, record.valueSchema(), record.value()));
        } catch (RuntimeException e) {
            throw new StageFailure("VALUE_CONVERTER", valueConverter, e);
        }
        return new Produced(key, value, headers);
    }

    /** Bytes of a source record as Kafka stores them. */
    record Produced(byte[] key, byte[] value, RecordHeaders headers) {}

    /** A consumed record as Connect gives it to a sink task, before the transformations. */
    SinkRecord consume(
            String topic, int partition, long offset, byte[] key, byte[] value,
            RecordHeaders kafkaHeaders, long timestamp, TimestampType timestampType) {
        SchemaAndValue keyData;
        try {
            keyData = retries.run(() -> keyConverter.toConnectData(topic, kafkaHeaders, key));
        } catch (RuntimeException e) {
            throw new StageFailure("KEY_CONVERTER", keyConverter, e);
        }
        SchemaAndValue valueData;
        try {
            valueData = retries.run(() -> valueConverter.toConnectData(topic, kafkaHeaders, value));
        } catch (RuntimeException e) {
            throw new StageFailure("VALUE_CONVERTER", valueConverter, e);
        }
        ConnectHeaders headers = new ConnectHeaders();
        try {
            for (org.apache.kafka.common.header.Header header : kafkaHeaders) {
                SchemaAndValue data = retries.run(() -> headerConverter.toConnectHeader(topic, header.key(), header.value()));
                headers.add(header.key(), data);
            }
        } catch (RuntimeException e) {
            throw new StageFailure("HEADER_CONVERTER", headerConverter, e);
        }
        Long at = timestampType == TimestampType.NO_TIMESTAMP_TYPE ? null : timestamp;
        return new SinkRecord(
                topic, partition, keyData.schema(), keyData.value(), valueData.schema(), valueData.value(),
                offset, at, timestampType, headers, topic, partition, offset);
    }

    @Override
    public void close() {
        for (Stage<?> stage : sourceStages) {
            closeStage(stage);
        }
        for (Stage<?> stage : sinkStages) {
            closeStage(stage);
        }
        closeQuietly(keyConverter);
        closeQuietly(valueConverter);
        closeQuietly(headerConverter);
    }

    private static void closeStage(Stage<?> stage) {
        closeQuietly(stage.transformation());
        closeQuietly(stage.predicate());
    }

    static void closeQuietly(Object closeable) {
        if (closeable instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                System.err.println("closing " + closeable.getClass().getName() + " failed: " + e);
            }
        }
    }
}
