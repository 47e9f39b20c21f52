package headrace.jvm;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.google.protobuf.ByteString;
import headrace.v1.Jvm.ConsumedBatch;
import headrace.v1.Jvm.ConsumedRecord;
import headrace.v1.Jvm.Header;
import headrace.v1.Jvm.PutRequest;
import headrace.v1.Jvm.RecordSet;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/** A put's records read back as Connect's consumer would have handed them to the task. */
class RecordReadingTest {
    private static ByteString bytes(String text) {
        return ByteString.copyFrom(text, UTF_8);
    }

    private static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, UTF_8);
    }

    @Test
    void recordsThenBatchesThenRecordSetsKeepTheirOrderBytesAndPlaces() {
        ConsumedRecord single = ConsumedRecord.newBuilder()
                .setTopic("t").setPartition(0).setOffset(7).setKey(bytes("k0")).setValue(bytes("v0"))
                .addHeaders(Header.newBuilder().setKey("h").setValue(bytes("x")))
                .setTimestamp(1000).setTimestampType("LogAppendTime").build();
        // Two records in one run of bytes: the first with a key and a null value, the second
        // with no key, an empty value and no timestamp.
        ConsumedBatch batch = ConsumedBatch.newBuilder()
                .setTopic("t").setPartition(1).addOffsets(20).addOffsets(21)
                .addTimestamps(2000).addTimestamps(-1).setTimestampType("CreateTime")
                .setKeys(bytes("k1")).addKeyLengths(2).addKeyLengths(-1)
                .setValues(ByteString.EMPTY).addValueLengths(-1).addValueLengths(0).build();
        MemoryRecords broker = MemoryRecords.withRecords(30L, Compression.NONE,
                new SimpleRecord(3000L, "k3".getBytes(UTF_8), "v3".getBytes(UTF_8),
                        new RecordHeader[] {new RecordHeader("trace", "y".getBytes(UTF_8))}),
                new SimpleRecord(3001L, null, "v4".getBytes(UTF_8)));
        ByteBuffer buffer = broker.buffer();
        RecordSet set = RecordSet.newBuilder().setTopic("u").setPartition(2)
                .setBatches(ByteString.copyFrom(buffer)).build();
        PutRequest put = PutRequest.newBuilder().setConnector("c").setTask(0)
                .addRecords(single).addBatches(batch).addRecordSets(set).build();

        List<SinkRun.Consumed> read = SinkRun.Consumed.of(put);

        assertEquals(5, read.size());
        SinkRun.Consumed first = read.get(0);
        assertEquals(List.of("t", 0, 7L, "k0", "v0", 1000L, TimestampType.LOG_APPEND_TIME),
                List.of(first.topic(), first.partition(), first.offset(), text(first.key()), text(first.value()),
                        first.timestamp(), first.timestampType()));
        assertArrayEquals("x".getBytes(UTF_8), first.headers().lastHeader("h").value());

        SinkRun.Consumed keyed = read.get(1);
        assertEquals(List.of(1, 20L, "k1", 2000L, TimestampType.CREATE_TIME),
                List.of(keyed.partition(), keyed.offset(), text(keyed.key()), keyed.timestamp(), keyed.timestampType()));
        assertNull(keyed.value());
        SinkRun.Consumed unkeyed = read.get(2);
        assertNull(unkeyed.key());
        assertArrayEquals(new byte[0], unkeyed.value());
        assertEquals(List.of(21L, -1L, TimestampType.NO_TIMESTAMP_TYPE),
                List.of(unkeyed.offset(), unkeyed.timestamp(), unkeyed.timestampType()));

        SinkRun.Consumed fromBroker = read.get(3);
        assertEquals(List.of("u", 2, 30L, "k3", "v3", 3000L, TimestampType.CREATE_TIME),
                List.of(fromBroker.topic(), fromBroker.partition(), fromBroker.offset(), text(fromBroker.key()),
                        text(fromBroker.value()), fromBroker.timestamp(), fromBroker.timestampType()));
        assertArrayEquals("y".getBytes(UTF_8), fromBroker.headers().lastHeader("trace").value());
        SinkRun.Consumed last = read.get(4);
        assertEquals(31L, last.offset());
        assertNull(last.key());
        assertEquals("v4", text(last.value()));
    }

    @Test
    void aBatchWithoutLengthsHasOnlyNullKeysAndValues() {
        ConsumedBatch batch = ConsumedBatch.newBuilder()
                .setTopic("t").setPartition(0).addOffsets(5).addTimestamps(10).setTimestampType("CreateTime").build();

        List<SinkRun.Consumed> read = SinkRun.Consumed.of(PutRequest.newBuilder().addBatches(batch).build());

        assertEquals(1, read.size());
        assertNull(read.get(0).key());
        assertNull(read.get(0).value());
    }
}
