package headrace.jvm;

import headrace.v1.Jvm.JvmEvent;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** What connectors ask of the runtime on their own, streamed to whoever watches. */
final class Events {
    private final List<StreamObserver<JvmEvent>> watchers = new CopyOnWriteArrayList<>();

    void watch(StreamObserver<JvmEvent> watcher) {
        watchers.add(watcher);
    }

    void publish(JvmEvent event) {
        for (StreamObserver<JvmEvent> watcher : watchers) {
            try {
                synchronized (watcher) {
                    watcher.onNext(event);
                }
            } catch (RuntimeException e) {
                watchers.remove(watcher); // gone: its stream was cancelled
            }
        }
    }
}
