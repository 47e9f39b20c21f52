package headrace.jvm;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;

/**
 * Source partitions and offsets as JSON, written and read as Connect's offset store writes and
 * reads them: its JsonConverter without schemas. Integers read back are Longs, as on Connect.
 */
final class Json {
    private static final JsonConverter CONVERTER = new JsonConverter();

    static {
        CONVERTER.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), false);
    }

    private Json() {}

    static String write(Map<String, ?> map) {
        if (map == null) {
            return "";
        }
        byte[] bytes = CONVERTER.fromConnectData("", null, map);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> read(String json) {
        if (json == null || json.isEmpty()) {
            return null;
        }
        Object value = CONVERTER.toConnectData("", json.getBytes(StandardCharsets.UTF_8)).value();
        if (value != null && !(value instanceof Map)) {
            throw new IllegalArgumentException("not a JSON object: " + json);
        }
        return (Map<String, Object>) value;
    }

    /** A map whose whole numbers are Longs, so that what a task asks for finds what was read. */
    static Object normalised(Object value) {
        if (value instanceof Integer || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> out = new HashMap<>();
            map.forEach((k, v) -> out.put(k, normalised(v)));
            return out;
        }
        if (value instanceof List<?> list) {
            return list.stream().map(Json::normalised).toList();
        }
        return value;
    }
}
