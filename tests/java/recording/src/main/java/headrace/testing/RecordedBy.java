package headrace.testing;

import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.components.Versioned;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.transforms.Transformation;

/** A transformation in a plugin's own jar: adds a header naming the value of {@code by}. */
public class RecordedBy<R extends ConnectRecord<R>> implements Transformation<R>, Versioned {
    private String by = "";

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs.get("by");
        by = value == null ? "" : value.toString();
    }

    @Override
    public R apply(R record) {
        record.headers().addString("recorded-by", by);
        return record;
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef().define("by", ConfigDef.Type.STRING, "", ConfigDef.Importance.LOW, "Who recorded it.");
    }

    @Override
    public void close() {}

    @Override
    public String version() {
        return "1.0.0";
    }
}
