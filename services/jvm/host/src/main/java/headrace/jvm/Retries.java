package headrace.jvm;

import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.apache.kafka.connect.errors.RetriableException;

/**
 * A converter's or transformation's RetriableException retried as Connect's worker retries it
 * ({@code errors.retry.timeout}, {@code errors.retry.delay.max.ms}): again after 300 ms, then
 * twice as long each time (a random delay up to the maximum once past it), until the timeout
 * has passed, when the last failure stands. 0 (the default) retries nothing; -1, for ever.
 */
final class Retries {
    static final long FIRST_DELAY_MS = 300;
    private final long timeoutMs;
    private final long maxDelayMs;

    Retries(long timeoutMs, long maxDelayMs) {
        this.timeoutMs = timeoutMs;
        this.maxDelayMs = Math.max(0, maxDelayMs);
    }

    static Retries of(Map<String, String> config) {
        return new Retries(
                number(config, "errors.retry.timeout", 0), number(config, "errors.retry.delay.max.ms", 60_000));
    }

    private static long number(Map<String, String> config, String key, long otherwise) {
        String raw = config.getOrDefault(key, "").trim();
        return raw.isEmpty() ? otherwise : Long.parseLong(raw);
    }

    <T> T run(Supplier<T> operation) {
        long deadline = timeoutMs < 0 ? Long.MAX_VALUE : System.currentTimeMillis() + timeoutMs;
        for (int attempt = 1; ; attempt++) {
            try {
                return operation.get();
            } catch (RetriableException e) {
                long left = deadline - System.currentTimeMillis();
                if (timeoutMs == 0 || left <= 0) {
                    throw e;
                }
                sleep(Math.min(left, delay(attempt)));
            }
        }
    }

    long delay(int attempt) {
        long delay = attempt >= 20 ? Long.MAX_VALUE : FIRST_DELAY_MS << (attempt - 1);
        return delay > maxDelayMs ? ThreadLocalRandom.current().nextLong(maxDelayMs + 1) : delay;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RetriableException("interrupted while waiting to retry", e);
        }
    }
}
