// SPDX-License-Identifier: Apache-2.0
// StubContext: the ChannelHandlerContext of one simulated connection for NettyIdlePerRead, so that
// Netty's own IdleStateHandler runs unmodified without a socket. What the handler uses is real:
// executor() is the event loop its check tasks are scheduled on, channel().isOpen() is true, and
// the events it fires are counted or dropped (the next handler of a pipeline would get them).
// Everything else is unused by IdleStateHandler's read path and throws.

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelProgressivePromise;
import io.netty.channel.ChannelPromise;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.Attribute;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.EventExecutor;

import java.lang.reflect.Proxy;
import java.net.SocketAddress;

final class StubContext implements ChannelHandlerContext {
    /** Counts the idle events of every connection (loop thread only). */
    static final class Events {
        long idle;
    }

    /** One open channel for every context: IdleStateHandler asks only isOpen(). */
    static final Channel OPEN_CHANNEL = (Channel) Proxy.newProxyInstance(
            Channel.class.getClassLoader(), new Class<?>[] {Channel.class}, (proxy, method, args) -> {
                switch (method.getName()) {
                    case "isOpen", "isActive", "isRegistered" -> {
                        return true;
                    }
                    case "hashCode" -> {
                        return 1;
                    }
                    case "equals" -> {
                        return proxy == args[0];
                    }
                    case "toString" -> {
                        return "simulated channel";
                    }
                    default -> throw new UnsupportedOperationException(method.getName());
                }
            });

    private final EventExecutor executor;
    private final ChannelHandler handler;
    private final Events events;

    StubContext(EventExecutor executor, ChannelHandler handler, Events events) {
        this.executor = executor;
        this.handler = handler;
        this.events = events;
    }

    private static UnsupportedOperationException unused() {
        return new UnsupportedOperationException("not used by IdleStateHandler's read path");
    }

    @Override public Channel channel() { return OPEN_CHANNEL; }
    @Override public EventExecutor executor() { return executor; }
    @Override public String name() { return "idle"; }
    @Override public ChannelHandler handler() { return handler; }
    @Override public boolean isRemoved() { return false; }

    @Override public ChannelHandlerContext fireUserEventTriggered(Object event) {
        if (event instanceof IdleStateEvent) {
            events.idle++;
        }
        return this;
    }
    // Where a pipeline would pass these on to the next handler: there is none.
    @Override public ChannelHandlerContext fireChannelRead(Object msg) { return this; }
    @Override public ChannelHandlerContext fireChannelReadComplete() { return this; }
    @Override public ChannelHandlerContext fireChannelActive() { return this; }
    @Override public ChannelHandlerContext fireChannelInactive() { return this; }
    @Override public ChannelHandlerContext fireChannelRegistered() { return this; }
    @Override public ChannelHandlerContext fireChannelUnregistered() { return this; }
    @Override public ChannelHandlerContext fireExceptionCaught(Throwable cause) { throw unused(); }
    @Override public ChannelHandlerContext fireChannelWritabilityChanged() { throw unused(); }
    @Override public ChannelHandlerContext read() { throw unused(); }
    @Override public ChannelHandlerContext flush() { throw unused(); }
    @Override public ChannelPipeline pipeline() { throw unused(); }
    @Override public ByteBufAllocator alloc() { throw unused(); }
    @Deprecated @Override public <T> Attribute<T> attr(AttributeKey<T> key) { throw unused(); }
    @Deprecated @Override public <T> boolean hasAttr(AttributeKey<T> key) { throw unused(); }
    @Override public ChannelFuture bind(SocketAddress a) { throw unused(); }
    @Override public ChannelFuture connect(SocketAddress a) { throw unused(); }
    @Override public ChannelFuture connect(SocketAddress a, SocketAddress b) { throw unused(); }
    @Override public ChannelFuture disconnect() { throw unused(); }
    @Override public ChannelFuture close() { throw unused(); }
    @Override public ChannelFuture deregister() { throw unused(); }
    @Override public ChannelFuture bind(SocketAddress a, ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture connect(SocketAddress a, ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture connect(SocketAddress a, SocketAddress b, ChannelPromise p) {
        throw unused();
    }
    @Override public ChannelFuture disconnect(ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture close(ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture deregister(ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture write(Object msg) { throw unused(); }
    @Override public ChannelFuture write(Object msg, ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture writeAndFlush(Object msg, ChannelPromise p) { throw unused(); }
    @Override public ChannelFuture writeAndFlush(Object msg) { throw unused(); }
    @Override public ChannelPromise newPromise() { throw unused(); }
    @Override public ChannelProgressivePromise newProgressivePromise() { throw unused(); }
    @Override public ChannelFuture newSucceededFuture() { throw unused(); }
    @Override public ChannelFuture newFailedFuture(Throwable cause) { throw unused(); }
    @Override public ChannelPromise voidPromise() { throw unused(); }
}
