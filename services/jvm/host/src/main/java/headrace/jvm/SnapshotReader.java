package headrace.jvm;

import headrace.v1.Jvm.SourceOffset;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/**
 * A source task's committed offsets as its task started: what Connect's reader would return
 * then (each partition's last offset). Whole numbers compare as Longs, as Connect reads them.
 */
final class SnapshotReader implements OffsetStorageReader {
    private final Map<Object, Map<String, Object>> offsets = new HashMap<>();

    SnapshotReader(List<SourceOffset> snapshot) {
        for (SourceOffset entry : snapshot) {
            Map<String, Object> offset = Json.read(entry.getOffset());
            offsets.put(Json.normalised(Json.read(entry.getPartition())), offset);
        }
    }

    @Override
    public <T> Map<String, Object> offset(Map<String, T> partition) {
        return offsets.get(Json.normalised(partition));
    }

    @Override
    public <T> Map<Map<String, T>, Map<String, Object>> offsets(Collection<Map<String, T>> partitions) {
        Map<Map<String, T>, Map<String, Object>> found = new HashMap<>();
        for (Map<String, T> partition : partitions) {
            found.put(partition, offset(partition));
        }
        return found;
    }
}
