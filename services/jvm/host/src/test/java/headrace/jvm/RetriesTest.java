package headrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.connect.errors.RetriableException;
import org.junit.jupiter.api.Test;

class RetriesTest {
    @Test
    void theWaitsDoubleFrom300MsAndTurnRandomBelowTheMaximumPastIt() {
        Retries retries = new Retries(60_000, 1_000);
        assertEquals(300, retries.delay(1));
        assertEquals(600, retries.delay(2));
        for (int attempt = 3; attempt < 40; attempt++) {
            long delay = retries.delay(attempt);
            assertTrue(0 <= delay && delay <= 1_000, "attempt " + attempt + ": " + delay);
        }
    }

    @Test
    void noTimeoutRetriesNothing() {
        AtomicInteger calls = new AtomicInteger();
        RetriableException failure = new RetriableException("busy");
        Retries none = Retries.of(Map.of());
        RetriableException thrown = assertThrows(RetriableException.class, () -> none.run(() -> {
            calls.incrementAndGet();
            throw failure;
        }));
        assertSame(failure, thrown);
        assertEquals(1, calls.get());
    }

    @Test
    void aCallThatSucceedsWithinTheTimeoutIsAnsweredAndAnotherErrorIsNotRetried() {
        AtomicInteger calls = new AtomicInteger();
        Retries retries = Retries.of(Map.of("errors.retry.timeout", "5000"));
        String answer = retries.run(() -> {
            if (calls.incrementAndGet() < 2) {
                throw new RetriableException("busy");
            }
            return "done";
        });
        assertEquals("done", answer);
        assertEquals(2, calls.get());
        assertThrows(IllegalStateException.class, () -> retries.run(() -> {
            throw new IllegalStateException("not retriable");
        }));
    }
}
