// SPDX-License-Identifier: Apache-2.0
// Output and measurement helpers of NettyTimerBench: wheel-bench's JSON-line shape
// (apps/wheel-bench/bench_report.h), clocks, heap readings, worker threads, random delays.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

final class Probe {
    static final long MS = 1_000_000L;
    static final long SEC = 1_000 * MS;

    private Probe() {}

    /** Extra keys of one JSON line, in insertion order. */
    static Map<String, Object> extra(Object... keysAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            m.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }

    /** Prints {"impl":"netty","metric",...,"tick_ms", extras...} on stdout and flushes. */
    static void emit(String metric, long n, double value, String unit, long tickMs,
                     Map<String, Object> extras) {
        StringBuilder b = new StringBuilder(192);
        b.append("{\"impl\":\"netty\",\"metric\":\"").append(metric).append("\",\"n\":").append(n)
                .append(",\"value\":").append(number(value)).append(",\"unit\":\"").append(unit)
                .append("\",\"tick_ms\":").append(tickMs);
        if (extras != null) {
            for (Map.Entry<String, Object> e : extras.entrySet()) {
                b.append(",\"").append(e.getKey()).append("\":").append(json(e.getValue()));
            }
        }
        System.out.println(b.append('}'));
        System.out.flush();
    }

    static void emit(String metric, long n, double value, String unit, long tickMs) {
        emit(metric, n, value, unit, tickMs, null);
    }

    private static String json(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Double d) {
            return number(d);
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        return "\"" + v + "\"";
    }

    /** As wheel-bench prints numbers: 3 decimals at most, integral without a fraction, NaN null. */
    static String number(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return "null";
        }
        double r = Math.abs(v) < 1e12 ? Math.round(v * 1000.0) / 1000.0 : v;
        if (r == Math.rint(r) && Math.abs(r) < 1e15) {
            return Long.toString((long) r);
        }
        // Plain decimal text: Java's "1.0E-4" style is valid JSON but unlike wheel-bench's output.
        return new BigDecimal(Double.toString(r)).stripTrailingZeros().toPlainString();
    }

    static void log(String format, Object... args) {
        System.err.println("[netty-bench] " + String.format(Locale.ROOT, format, args));
    }

    /** Delays uniform in [lo, hi) nanoseconds. */
    static long[] delays(SplittableRandom rnd, int count, long lo, long hi) {
        long[] d = new long[count];
        for (int i = 0; i < count; i++) {
            d[i] = rnd.nextLong(lo, hi);
        }
        return d;
    }

    static void sleepMs(long ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    /** Five collections with pauses: the JVM's counterpart of wheel-bench's settle sleep. */
    static void settleHeap() throws InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(60);
        }
    }

    static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    static long gcMillis() {
        long total = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, gc.getCollectionTime());
        }
        return total;
    }

    /** Polls pendingTimeouts() every ~50 us until <= 0: the nanoTime it did, or -1 after limitMs. */
    static long waitPendingZero(HashedWheelTimer t, long limitMs) {
        long limit = System.nanoTime() + limitMs * MS;
        for (;;) {
            if (t.pendingTimeouts() <= 0) {
                return System.nanoTime();
            }
            if (System.nanoTime() > limit) {
                return -1;
            }
            LockSupport.parkNanos(50_000);
        }
    }

    static void stop(HashedWheelTimer t) {
        int left = t.stop().size();
        if (left > 0) {
            log("stop(): %d unprocessed timeouts returned", left);
        }
    }

    static void cancelAll(Timeout[] refs) {
        for (Timeout x : refs) {
            if (x != null) {
                x.cancel();
            }
        }
    }

    /** Names the timers' worker threads and remembers the last one, to read its CPU clock. */
    static final class Workers implements ThreadFactory {
        private final AtomicInteger seq = new AtomicInteger();
        private volatile Thread last;

        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "netty-bench-" + seq.incrementAndGet());
            last = t;
            return t;
        }

        Thread last() {
            return last;
        }
    }

    static final Workers WORKERS = new Workers();

    /** A Netty timer at tickMs with `wheel` buckets; its worker is WORKERS.last() afterwards. */
    static HashedWheelTimer timer(long tickMs, int wheel) {
        return new HashedWheelTimer(WORKERS, tickMs, TimeUnit.MILLISECONDS, wheel);
    }

    /** CPU nanoseconds of `thread` so far (ThreadMXBean), -1 when unsupported. */
    static long cpuNs(Thread thread) {
        return ManagementFactory.getThreadMXBean().getThreadCpuTime(thread.getId());
    }
}
