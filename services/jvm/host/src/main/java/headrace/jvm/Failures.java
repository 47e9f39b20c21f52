package headrace.jvm;

import headrace.v1.Jvm.RecordFailure;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.apache.kafka.connect.errors.RetriableException;

/** Java exceptions as the Python process reports them: a trace, or a record's failure. */
final class Failures {
    /** What fits in a gRPC status's description (trailers hold 8 KiB by default). */
    private static final int MAX_TRACE = 6000;

    private Failures() {}

    static String trace(Throwable error) {
        StringWriter out = new StringWriter();
        error.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    /**
     * The status a call fails with, the plugin's exception's trace its description: UNAVAILABLE
     * for Connect's RetriableException, INVALID_ARGUMENT for a unit not running here, UNKNOWN
     * for anything else the plugin raised.
     */
    static StatusRuntimeException status(Throwable error) {
        String trace = trace(error);
        if (trace.length() > MAX_TRACE) {
            trace = trace.substring(0, MAX_TRACE) + "\n\t... (trace cut)";
        }
        Status status;
        if (error instanceof UnknownUnit) {
            status = Status.INVALID_ARGUMENT;
        } else if (error instanceof RetriableException) {
            status = Status.UNAVAILABLE; // the loop retries it, as Connect's worker does
        } else {
            status = Status.UNKNOWN;
        }
        return status.withDescription(trace).asRuntimeException();
    }

    static RecordFailure record(int index, Pipeline.StageFailure failure, String topic) {
        Throwable cause = failure.getCause() == null ? failure : failure.getCause();
        return RecordFailure.newBuilder()
                .setIndex(index)
                .setStage(failure.stage)
                .setExecuting(failure.executing)
                .setErrorClass(cause.getClass().getName())
                .setMessage(String.valueOf(cause.getMessage()))
                .setTrace(trace(cause))
                .setTopic(topic == null ? "" : topic)
                .build();
    }

    /** A call named a connector or task this host does not run. */
    static final class UnknownUnit extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UnknownUnit(String unit) {
            super(unit + " does not run here");
        }
    }
}
