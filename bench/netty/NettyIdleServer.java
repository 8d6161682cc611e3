// SPDX-License-Identifier: Apache-2.0
// NettyIdleServer: the project's line protocol served by Netty (NIO transport, Debian's
// libnetty-java), with Netty's IdleStateHandler closing silent connections: the reference that
// wheel-server's idle detector is compared against with the same clients (wheel-load,
// scripts/net-measure.py).
//
// Protocol (the subset of wheel-server's that needs no timer of ours), one command per line, "\n"
// or "\r\n":  PING -> "PONG";  QUIT -> "BYE", then close;  anything else -> "ERR unknown command";
// a line over --max-line bytes -> "ERR line too long", then close. No line for --idle-ms ->
// "BYE idle", then close (READER_IDLE). SIGTERM/SIGINT: "BYE shutdown" to every connection, close,
// exit 0. Prints "listening on HOST:PORT" on stdout once bound; diagnostics and a stats line every
// --stats-ms on stderr.

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.CharsetUtil;
import io.netty.util.concurrent.GlobalEventExecutor;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class NettyIdleServer {
    private static final AtomicLong ACCEPTED = new AtomicLong();
    private static final AtomicLong IDLE_CLOSED = new AtomicLong();
    private static final AtomicLong TOO_LONG = new AtomicLong();
    private static final ChannelGroup OPEN = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);

    private static ByteBuf text(String s) {
        return Unpooled.copiedBuffer(s + "\n", CharsetUtil.US_ASCII);
    }

    /** One per connection: answers lines, closes on idle and on over-long lines. */
    private static final class LineHandler extends SimpleChannelInboundHandler<ByteBuf> {
        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            ACCEPTED.incrementAndGet();
            OPEN.add(ctx.channel());
            super.channelActive(ctx);
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            String line = frame.toString(CharsetUtil.US_ASCII);
            switch (line) {
                case "PING" -> ctx.write(text("PONG"));
                case "QUIT" -> ctx.writeAndFlush(text("BYE")).addListener(ChannelFutureListener.CLOSE);
                default -> ctx.write(text("ERR unknown command"));
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();  // one flush per read, however many lines it held
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object event) throws Exception {
            if (event instanceof IdleStateEvent) {
                IDLE_CLOSED.incrementAndGet();
                ctx.writeAndFlush(text("BYE idle")).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            super.userEventTriggered(ctx, event);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof TooLongFrameException) {
                TOO_LONG.incrementAndGet();
                ctx.writeAndFlush(text("ERR line too long")).addListener(ChannelFutureListener.CLOSE);
            } else {
                ctx.close();  // resets and the like: nothing to tell the peer
            }
        }
    }

    private static void fail(String message) {
        System.err.println("NettyIdleServer: " + message);
        System.exit(2);
    }

    public static void main(String[] argv) throws Exception {
        String host = "127.0.0.1";
        int port = 7000;
        long idleMs = 5000;
        long statsMs = 5000;
        int maxLine = 4096;
        int workers = 1;
        for (int i = 0; i < argv.length; i += 2) {
            if (argv[i].equals("--help") || argv[i].equals("-h")) {
                System.out.println("usage: NettyIdleServer [--host 127.0.0.1] [--port 7000 (0: any)]"
                        + " [--idle-ms 5000] [--max-line 4096] [--stats-ms 5000] [--workers 1]");
                return;
            }
            if (i + 1 == argv.length) {
                fail(argv[i] + " needs a value");
            }
            String v = argv[i + 1];
            try {
                switch (argv[i]) {
                    case "--host" -> host = v;
                    case "--port" -> port = (int) BenchArgs.whole("--port", v, 0, 65_535);
                    case "--idle-ms" -> idleMs = BenchArgs.whole("--idle-ms", v, 1, 86_400_000);
                    case "--max-line" ->
                        maxLine = (int) BenchArgs.whole("--max-line", v, 1, 1 << 20);
                    case "--stats-ms" ->
                        statsMs = BenchArgs.whole("--stats-ms", v, 100, 86_400_000);
                    case "--workers" -> workers = (int) BenchArgs.whole("--workers", v, 1, 64);
                    default -> fail("unknown option " + argv[i]);
                }
            } catch (BenchArgs.BadOption e) {
                fail(e.getMessage());
            }
        }
        final long idle = idleMs;
        final int max = maxLine;
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup group = new NioEventLoopGroup(workers);
        ServerBootstrap b = new ServerBootstrap().group(boss, group)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ChannelPipeline p = ch.pipeline();
                        p.addLast(new IdleStateHandler(idle, 0, 0, TimeUnit.MILLISECONDS));
                        p.addLast(new LineBasedFrameDecoder(max, true, true));
                        p.addLast(new LineHandler());
                    }
                });
        Channel server;
        try {
            server = b.bind(host, port).sync().channel();
        } catch (Exception e) {
            System.err.println("NettyIdleServer: cannot listen on " + host + ":" + port + ": " + e);
            boss.shutdownGracefully();
            group.shutdownGracefully();
            System.exit(1);
            return;
        }
        InetSocketAddress bound = (InetSocketAddress) server.localAddress();
        String shown = bound.getAddress().getHostAddress();
        System.out.println("listening on " + (shown.contains(":") ? "[" + shown + "]" : shown) + ":"
                + bound.getPort());
        System.out.flush();
        System.err.println("NettyIdleServer: idle-ms=" + idleMs + " max-line=" + maxLine
                + " workers=" + workers + ", NIO transport");
        group.scheduleAtFixedRate(() -> System.err.println("NettyIdleServer: connections="
                        + OPEN.size() + " accepted=" + ACCEPTED.get() + " idle_closed="
                        + IDLE_CLOSED.get() + " too_long_closed=" + TOO_LONG.get()),
                statsMs, statsMs, TimeUnit.MILLISECONDS);

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
            OPEN.writeAndFlush(text("BYE shutdown")).awaitUninterruptibly(2, TimeUnit.SECONDS);
            OPEN.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }, "shutdown"));
        server.closeFuture().sync();
    }
}
