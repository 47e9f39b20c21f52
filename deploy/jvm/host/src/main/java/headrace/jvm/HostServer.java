package headrace.jvm;

import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
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

    static HostServer start(Path socket, BindableService service) throws IOException {
        EpollEventLoopGroup boss = new EpollEventLoopGroup(1);
        EpollEventLoopGroup workers = new EpollEventLoopGroup(2);
        Server server =
                NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                        .channelType(EpollServerDomainSocketChannel.class)
                        .bossEventLoopGroup(boss)
                        .workerEventLoopGroup(workers)
                        .maxInboundMessageSize(MAX_MESSAGE)
                        .addService(service)
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
