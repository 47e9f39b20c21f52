package headrace.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import headrace.v1.Jvm.SourceOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A source task's offsets as its task started, read as Connect's offset reader reads them. */
class SnapshotReaderTest {
    private static SourceOffset offset(String partition, String offset) {
        return SourceOffset.newBuilder().setPartition(partition).setOffset(offset).build();
    }

    @Test
    void eachPartitionReadsItsOwnOffsetWithWholeNumbersAsLongs() {
        SnapshotReader reader = new SnapshotReader(List.of(
                offset("{\"file\":\"a\"}", "{\"position\":3}"),
                offset("{\"table\":\"t\",\"shard\":1}", "{\"lsn\":42}")));
        assertEquals(Map.of("position", 3L), reader.offset(Map.of("file", "a")));
        // A partition written with an Integer is found with the Long that JSON reads back.
        assertEquals(Map.of("lsn", 42L), reader.offset(Map.of("table", "t", "shard", 1)));
        assertNull(reader.offset(Map.of("file", "b")));
    }

    @Test
    void manyPartitionsAreAnsweredEachOnceAndAnUnknownOneWithNull() {
        SnapshotReader reader = new SnapshotReader(List.of(offset("{\"file\":\"a\"}", "{\"position\":3}")));
        Map<Map<String, String>, Map<String, Object>> found =
                reader.offsets(List.of(Map.of("file", "a"), Map.of("file", "b")));
        assertEquals(Map.of("position", 3L), found.get(Map.of("file", "a")));
        assertNull(found.get(Map.of("file", "b")));
        assertEquals(2, found.size());
    }
}
