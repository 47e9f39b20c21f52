package headrace.jvm;

import io.grpc.BindableService;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

/** The gRPC server on a Unix socket only its owner may use. */
final class HostServer {
    private static final int MAX_MESSAGE = 64 * 1024 * 1024;

    private final Server server;
    private final EpollEventLoopGroup boss;
    private final EpollEventLoopGroup workers;

    private HostServer(Server server, EpollEventLoopGroup boss, EpollEventLoopGroup workers) {
        this.server = server;
        this.boss = boss;
        this.workers = workers;
    }

    /** The metadata key every call must carry the owner's key under. */
    static final Metadata.Key<String> HOST_KEY =
            Metadata.Key.of("x-headrace-host-key", Metadata.ASCII_STRING_MARSHALLER);

    /**
     * Answers only calls that carry {@code key}: the socket's path is no secret from the other
     * processes of its user (sibling plugin processes among them). An empty key checks nothing.
     */
    static ServerInterceptor keyed(String key) {
        byte[] expected = key.getBytes(StandardCharsets.UTF_8);
        return new ServerInterceptor() {
            @Override
            public <Q, A> ServerCall.Listener<Q> interceptCall(
                    ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
                String given = headers.get(HOST_KEY);
                byte[] sent = given == null ? new byte[0] : given.getBytes(StandardCharsets.UTF_8);
                if (expected.length > 0 && !MessageDigest.isEqual(expected, sent)) {
                    call.close(Status.UNAUTHENTICATED.withDescription("no key, or not this one"), new Metadata());
                    return new ServerCall.Listener<Q>() {};
                }
                return next.startCall(call, headers);
            }
        };
    }

    static HostServer start(Path socket, BindableService service, String key) throws IOException {
        EpollEventLoopGroup boss = new EpollEventLoopGroup(1);
        EpollEventLoopGroup workers = new EpollEventLoopGroup(2);
        Server server =
                NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                        .channelType(EpollServerDomainSocketChannel.class)
                        .bossEventLoopGroup(boss)
                        .workerEventLoopGroup(workers)
                        .maxInboundMessageSize(MAX_MESSAGE)
                        .addService(ServerInterceptors.intercept(service, keyed(key)))
                        .build()
                        .start();
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
        return new HostServer(server, boss, workers);
    }

    void stop() throws InterruptedException {
        server.shutdown().awaitTermination(2, TimeUnit.SECONDS);
        boss.shutdownGracefully();
        workers.shutdownGracefully();
    }
}
