// SPDX-License-Identifier: Apache-2.0
// NettyIdlePerRead: the cost of an idle timeout per read with Netty's IdleStateHandler, the Java
// side of wheel-idle-bench (bench/idle-per-read; same options, phases and JSON lines, impl
// "netty"). N simulated connections (no sockets), each an unmodified IdleStateHandler with a
// reader idle time on one DefaultEventLoop, driven through StubContext as a pipeline would: the
// handler's channelActive() schedules its check task, and a read is channelRead() +
// channelReadComplete() (Netty 4.1: a flag, then lastReadTime = System.nanoTime()). A check task
// that finds activity re-schedules itself for the rest of the time; one that finds none fires
// READER_IDLE and re-schedules for the full time, as in a server that does not close.
//
// CPU columns are the event loop thread's (the thread that reads and runs the checks); the JVM's
// whole process CPU (GC and JIT included) is beside them as process_*. The idle phase reads the
// loop thread's CPU and wake-ups (voluntary context switches, /proc/self/task/TID/status) from
// the main thread over a window as wheel-idle-bench does (same settle, tail and clipping). Memory is RSS delta / N;
// the live heap per connection (after full collections) comes last, as heap_bytes_per_conn.
//
// Usage: bench/netty/run.sh NettyIdlePerRead [--n N] [--idle-ms MS] [--idle-secs S]
//        [--read-secs S] [--rate R] [--tight-reads N] [--seed N]

import io.netty.channel.DefaultEventLoop;
import io.netty.handler.timeout.IdleStateHandler;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

public final class NettyIdlePerRead {
    private static final Object MSG = new Object();
    // wheel-idle-bench's kIdleSettleSecs and kIdleTailSecs (bench/idle-per-read/per_read_driver.h).
    private static final double IDLE_SETTLE_SECS = 0.2;
    private static final double IDLE_TAIL_SECS = 0.5;

    private long n = 1_000_000;
    private long idleMs = 10_000;
    private double idleSecs = 5;
    private double readSecs = 10;
    private long rate = 200_000;
    private long tightReads = 1_000_000;
    private long seed = 42;

    private IdleStateHandler[] handlers;
    private StubContext[] contexts;
    private final StubContext.Events events = new StubContext.Events();

    /** wheel-idle-bench's ConnPicker: xorshift64*, the same connection sequence. */
    private static final class Picker {
        private long x;
        private final long n;

        Picker(long seed, long n) {
            this.x = seed | 1;
            this.n = n;
        }

        int next() {
            x ^= x >>> 12;
            x ^= x << 25;
            x ^= x >>> 27;
            long r = x * 0x2545F4914F6CDD1DL;
            return (int) (((r >>> 32) * n) >>> 32);
        }
    }

    private void readBatch(Picker picker, long count) throws Exception {
        for (long k = 0; k < count; k++) {
            int i = picker.next();
            handlers[i].channelRead(contexts[i], MSG);
            handlers[i].channelReadComplete(contexts[i]);
        }
    }

    static long rssBytes() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    /** {voluntary, nonvoluntary} context switches of thread `tid` of this process so far. */
    static long[] switches(String tid) throws Exception {
        long[] v = {0, 0};
        for (String line : Files.readAllLines(Path.of("/proc/self/task/" + tid + "/status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
                v[0] = Long.parseLong(line.replaceAll("[^0-9]", ""));
            } else if (line.startsWith("nonvoluntary_ctxt_switches:")) {
                v[1] = Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return v;
    }

    static long processCpuNs() {
        return ((com.sun.management.OperatingSystemMXBean)
                ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private void run() throws Exception {
        DefaultEventLoop loop = new DefaultEventLoop();
        Thread loopThread = loop.submit(Thread::currentThread).get();
        // The kernel's id of the loop thread: /proc/thread-self is "PID/task/TID" for the caller.
        String loopTid = loop.submit(() -> Files.readSymbolicLink(Path.of("/proc/thread-self"))
                .getFileName().toString()).get();
        Probe.settleHeap();
        long rss0 = rssBytes();
        long heap0 = Probe.usedHeap();

        long s0 = System.nanoTime();
        loop.submit(() -> {
            handlers = new IdleStateHandler[(int) n];
            contexts = new StubContext[(int) n];
            for (int i = 0; i < n; i++) {
                handlers[i] = new IdleStateHandler(idleMs, 0, 0, TimeUnit.MILLISECONDS);
                contexts[i] = new StubContext(loop, handlers[i], events);
                handlers[i].channelActive(contexts[i]);  // initialize(): schedules the check
            }
            return null;
        }).get();
        long s1 = System.nanoTime();
        long rss1 = rssBytes();
        Probe.emit("setup_ns_per_conn", n, (double) (s1 - s0) / n, "ns", 0,
                Probe.extra("idle_ms", idleMs));
        Probe.emit("bytes_per_conn", n, (double) (rss1 - rss0) / n, "bytes", 0, Probe.extra(
                "rss_before_mb", (rss0 / 1048576.0), "rss_after_mb", (rss1 / 1048576.0),
                "note", "RSS delta / N after opening N connections"));

        // Idle: no reads, no deadline due (the window ends before the first one).
        double room = (s0 + idleMs * 1_000_000 - System.nanoTime()) / 1e9 - IDLE_SETTLE_SECS
                - IDLE_TAIL_SECS;
        double window = Math.min(idleSecs, room);
        if (window < 0.1) {
            fail("setup left no idle window before the first deadline (" + room
                    + " s): raise --idle-ms");
        }
        Thread.sleep(Math.round(IDLE_SETTLE_SECS * 1000));
        long[] sw0 = switches(loopTid);
        long c0 = Probe.cpuNs(loopThread), p0 = processCpuNs(), w0 = System.nanoTime();
        Thread.sleep(Math.round(window * 1000));
        long[] sw1 = switches(loopTid);
        long c1 = Probe.cpuNs(loopThread), p1 = processCpuNs(), w1 = System.nanoTime();
        double idleWall = (w1 - w0) / 1e9;
        Probe.emit("idle_cpu_ms_per_s", n, (c1 - c0) / 1e6 / idleWall, "ms/s", 0, Probe.extra(
                "wakeups", sw1[0] - sw0[0], "wakeups_per_s", (sw1[0] - sw0[0]) / idleWall,
                "loop_iterations", -1, "preempted", sw1[1] - sw0[1],
                "process_cpu_ms_per_s", (p1 - p0) / 1e6 / idleWall,
                "threads", ManagementFactory.getThreadMXBean().getThreadCount(),
                "secs", idleWall, "secs_asked", idleSecs, "clean", true,
                "idle_events", loop.submit(() -> events.idle).get(),
                "note", "loop thread CPU per second and its wake-ups (voluntary context "
                        + "switches), read from another thread over the window; N connections, "
                        + "no reads"));
        Thread.sleep(Math.round(IDLE_TAIL_SECS / 2 * 1000));  // as long as wheel-idle-bench's

        // Paced reads: catch up to rate x elapsed every millisecond on the loop.
        Picker picker = new Picker(seed, n);
        long[] done = {0};
        long events0 = loop.submit(() -> events.idle).get();
        long[] sw2 = switches(loopTid);
        long c2 = Probe.cpuNs(loopThread), p2 = processCpuNs(), start = System.nanoTime();
        ScheduledFuture<?> pacer = loop.scheduleAtFixedRate(() -> {
            long target = (long) ((System.nanoTime() - start) * (double) rate / 1e9);
            if (target > done[0]) {  // at most 10 ms of reads per batch, as wheel-idle-bench
                long batch = Math.min(target - done[0], Math.max(1, rate / 100));
                try {
                    readBatch(picker, batch);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                done[0] += batch;
            }
        }, 1, 1, TimeUnit.MILLISECONDS);
        Thread.sleep(Math.round(readSecs * 1000));
        pacer.cancel(false);
        long reads = loop.submit(() -> done[0]).get();  // after the last batch
        long c3 = Probe.cpuNs(loopThread), p3 = processCpuNs(), end = System.nanoTime();
        long[] sw3 = switches(loopTid);
        double secs = (end - start) / 1e9;
        long fired = loop.submit(() -> events.idle).get() - events0;
        Probe.emit("ns_per_read", n, reads > 0 ? (double) (c3 - c2) / reads : 0, "ns", 0,
                Probe.extra("idle_ms", idleMs, "reads", reads, "rate_asked", rate,
                        "rate_done", reads / secs, "secs", secs,
                        "cpu_ms_per_s", (c3 - c2) / 1e6 / secs,
                        "process_ns_per_read", reads > 0 ? (double) (p3 - p2) / reads : 0.0,
                        "idle_events", fired, "wakeups_per_s", (sw3[0] - sw2[0]) / secs,
                        "read", "IdleStateHandler channelRead + channelReadComplete "
                                + "(lastReadTime = System.nanoTime())",
                        "note", "event loop thread CPU / reads; batches every 1 ms; "
                                + "check tasks run and re-schedule meanwhile"));
        long rss2 = rssBytes();
        Probe.emit("bytes_per_conn_after_reads", n, (double) (rss2 - rss0) / n, "bytes", 0,
                Probe.extra("rss_after_mb", rss2 / 1048576.0));

        if (tightReads > 0) {
            long c4 = Probe.cpuNs(loopThread);
            long[] wall = new long[1];
            loop.submit(() -> {
                long t0 = System.nanoTime();
                readBatch(picker, tightReads);
                wall[0] = System.nanoTime() - t0;
                return null;
            }).get();
            long c5 = Probe.cpuNs(loopThread);
            Probe.emit("tight_ns_per_read", n, (double) (c5 - c4) / tightReads, "ns", 0,
                    Probe.extra("reads", tightReads,
                            "wall_ns_per_read", (double) wall[0] / tightReads,
                            "note", "back to back in one task; loop thread CPU / reads"));
        }
        // Last, so that its full collections delay no phase: the live heap per connection.
        Probe.settleHeap();
        Probe.emit("heap_bytes_per_conn", n, (double) (Probe.usedHeap() - heap0) / n, "bytes", 0,
                Probe.extra("note", "heap in use after full collections, minus before setup, / N"));
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }

    private static void fail(String message) {
        System.err.println("NettyIdlePerRead: " + message);
        System.exit(2);
    }

    public static void main(String[] argv) throws Exception {
        NettyIdlePerRead b = new NettyIdlePerRead();
        try {
            b.parse(argv);
        } catch (BenchArgs.BadOption e) {
            fail(e.getMessage());
        }
        if ((b.idleSecs + IDLE_SETTLE_SECS + IDLE_TAIL_SECS) * 1000 >= b.idleMs) {
            fail("--idle-secs (" + b.idleSecs + " s) plus " + (IDLE_SETTLE_SECS + IDLE_TAIL_SECS)
                    + " s must be shorter than --idle-ms (" + b.idleMs + " ms)");
        }
        b.run();
    }

    /** Sets the fields from argv; BenchArgs.BadOption for a bad value. */
    private void parse(String[] argv) {
        for (int i = 0; i < argv.length; i++) {
            String name = argv[i];
            if (name.equals("--help") || name.equals("-h")) {
                System.out.println("NettyIdlePerRead [--n N] [--idle-ms MS] [--idle-secs S] "
                        + "[--read-secs S] [--rate R] [--tight-reads N] [--seed N]: the ranges and "
                        + "defaults of wheel-idle-bench");
                System.exit(0);
            }
            if (i + 1 == argv.length) {
                fail(name + " needs a value");
            }
            String v = argv[++i];
            switch (name) {
                case "--n" -> n = BenchArgs.whole(name, v, 1, 20_000_000);
                case "--idle-ms" -> idleMs = BenchArgs.whole(name, v, 10, 3_600_000);
                case "--idle-secs" -> idleSecs = BenchArgs.real(name, v, 0.1, 600);
                case "--read-secs" -> readSecs = BenchArgs.real(name, v, 0.1, 600);
                case "--rate" -> rate = BenchArgs.whole(name, v, 1, 100_000_000);
                case "--tight-reads" -> tightReads = BenchArgs.whole(name, v, 0, 1_000_000_000);
                case "--seed" -> seed = BenchArgs.whole(name, v, Long.MIN_VALUE, Long.MAX_VALUE);
                default -> fail("unknown option " + name);
            }
        }
    }
}
