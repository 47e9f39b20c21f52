package headrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void anOffsetReadsBackAsConnectsOffsetStoreReadsIt() {
        String written = Json.write(Map.of("filename", "/data/in.txt"));
        assertEquals("{\"filename\":\"/data/in.txt\"}", written);
        assertEquals(Map.of("position", 42L), Json.read("{\"position\":42}"));
    }

    @Test
    void wholeNumbersAreLongsAtEveryDepthSoThatWhatATaskAsksForIsFound() {
        Object normalised = Json.normalised(Map.of("a", 1, "b", List.of((short) 2, Map.of("c", (byte) 3))));
        assertEquals(Map.of("a", 1L, "b", List.of(2L, Map.of("c", 3L))), normalised);
    }

    @Test
    void nothingIsNoneAndAValueThatIsNoObjectIsRefused() {
        assertEquals("", Json.write(null));
        assertNull(Json.read(""));
        assertThrows(IllegalArgumentException.class, () -> Json.read("[1, 2]"));
    }
}
