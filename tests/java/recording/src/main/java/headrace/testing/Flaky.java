package headrace.testing;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A transformation that throws Connect's RetriableException for its first {@code failures}
 * records in its JVM, then passes every record on unchanged: a flaky lookup, retried or not as
 * {@code errors.retry.timeout} says.
 */
public final class Flaky<R extends ConnectRecord<R>> implements Transformation<R> {
    private static final AtomicInteger FAILED = new AtomicInteger();
    private int failures;

    @Override
    public void configure(Map<String, ?> configs) {
        Object given = configs.get("failures");
        failures = given == null ? 0 : Integer.parseInt(String.valueOf(given));
    }

    @Override
    public R apply(R record) {
        if (FAILED.getAndUpdate(n -> n < failures ? n + 1 : n) < failures) {
            throw new RetriableException("flaky: not this time");
        }
        return record;
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef().define("failures", ConfigDef.Type.INT, 0, ConfigDef.Importance.LOW,
                "how many records fail before the rest pass");
    }

    @Override
    public void close() {}
}
