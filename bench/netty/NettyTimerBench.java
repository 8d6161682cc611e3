// SPDX-License-Identifier: Apache-2.0
// NettyTimerBench: io.netty.util.HashedWheelTimer (Debian's libnetty-java, used as a library)
// measured with the method, options and JSON lines of the project's wheel-bench, so that
// scripts/compare-netty.sh can set the two side by side. Each metric runs on a fresh timer with
// the phases and settle times of apps/wheel-bench/timer_metrics.h; where wheel-bench sleeps to
// settle, this harness also lets the GC settle (five System.gc() calls). Scaling and longdelay
// live in PendingMetrics.java. JSON lines on stdout, diagnostics on stderr.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import io.netty.util.TimerTask;
import io.netty.util.Version;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class NettyTimerBench {
    static final TimerTask NOTHING = timeout -> { };

    private final BenchArgs a;

    NettyTimerBench(BenchArgs args) {
        this.a = args;
    }

    /** Counts fired tasks; the last one records when and opens the latch. */
    static final class Countdown implements TimerTask {
        final AtomicLong left;
        final CountDownLatch done = new CountDownLatch(1);
        volatile long doneAt;

        Countdown(long count) {
            left = new AtomicLong(count);
        }

        @Override
        public void run(Timeout timeout) {
            if (left.decrementAndGet() == 0) {
                doneAt = System.nanoTime();
                done.countDown();
            }
        }
    }

    void warmUp(SplittableRandom rnd) throws InterruptedException {
        if (a.warmupRounds <= 0 || a.warmupN <= 0) {
            return;
        }
        HashedWheelTimer t = Probe.timer(1, a.wheel);
        t.start();
        long t0 = System.nanoTime();
        for (int r = 0; r < a.warmupRounds; r++) {
            long[] d = Probe.delays(rnd, a.warmupN, Probe.SEC, 60 * Probe.SEC);
            Timeout[] refs = new Timeout[a.warmupN];
            for (int i = 0; i < refs.length; i++) {
                refs[i] = t.newTimeout(NOTHING, d[i], TimeUnit.NANOSECONDS);
            }
            Probe.cancelAll(refs);
            Probe.waitPendingZero(t, 30_000);
            Countdown c = new Countdown(a.warmupN);
            for (long x : Probe.delays(rnd, a.warmupN, 0, 50 * Probe.MS)) {
                t.newTimeout(c, x, TimeUnit.NANOSECONDS);
            }
            c.done.await(30, TimeUnit.SECONDS);
        }
        Probe.stop(t);
        Probe.log("warm-up: %d rounds x %d timeouts, %d ms", a.warmupRounds, a.warmupN,
                (System.nanoTime() - t0) / Probe.MS);
    }

    void scheduleAndCancel(SplittableRandom rnd, long tick) throws InterruptedException {
        long[] d = Probe.delays(rnd, a.n, Probe.SEC, 60 * Probe.SEC);
        Timeout[] refs = new Timeout[a.n];
        HashedWheelTimer t = Probe.timer(tick, a.wheel);
        t.start();
        Probe.settleHeap();

        long g0 = Probe.gcMillis();
        long s0 = System.nanoTime();
        for (int i = 0; i < a.n; i++) {
            refs[i] = t.newTimeout(NOTHING, d[i], TimeUnit.NANOSECONDS);
        }
        long s1 = System.nanoTime();
        long g1 = Probe.gcMillis();
        long pendingAfterSchedule = t.pendingTimeouts();
        if (a.wants("schedule")) {
            Probe.emit("schedule_ops_per_s", a.n, a.n / ((s1 - s0) / 1e9), "ops/s", tick,
                    Probe.extra("elapsed_ms", (s1 - s0) / 1e6, "gc_ms", g1 - g0));
        }
        // The worker files at most 100,000 a tick: wait until all sit in buckets.
        Probe.sleepMs(Math.max(200, (a.n / 100_000 + 3) * tick));
        long c0 = System.nanoTime();
        Probe.cancelAll(refs);
        long c1 = System.nanoTime();
        long pendingRightAfterCancel = t.pendingTimeouts();
        long zeroAt = Probe.waitPendingZero(t, 60_000);
        if (a.wants("cancel")) {
            Probe.emit("cancel_ops_per_s", a.n, a.n / ((c1 - c0) / 1e9), "ops/s", tick,
                    Probe.extra("elapsed_ms", (c1 - c0) / 1e6));
            Probe.emit("cancel_drain_ms", a.n, zeroAt < 0 ? Double.NaN : (zeroAt - c1) / 1e6, "ms",
                    tick, Probe.extra("pending_after_schedule", pendingAfterSchedule,
                            "pending_right_after_cancel", pendingRightAfterCancel,
                            "pending_at_end", t.pendingTimeouts()));
        }
        Probe.stop(t);
    }

    void expire(SplittableRandom rnd, long tick) throws InterruptedException {
        long[] d = Probe.delays(rnd, a.n, 0, 1000 * Probe.MS);
        long maxDelay = Arrays.stream(d).max().orElse(0);
        Countdown c = new Countdown(a.n);
        HashedWheelTimer t = Probe.timer(tick, a.wheel);
        t.start();
        Probe.settleHeap();

        long t0 = System.nanoTime();
        for (long x : d) {
            t.newTimeout(c, x, TimeUnit.NANOSECONDS);
        }
        long t1 = System.nanoTime();
        boolean ok = c.done.await(120, TimeUnit.SECONDS);
        if (!ok) {
            Probe.log("expire: only %d fired within 120 s", a.n - c.left.get());
        }
        long end = ok ? c.doneAt : System.nanoTime();
        double wallS = (end - t0) / 1e9;
        Probe.emit("expire_ops_per_s", a.n, ok ? a.n / wallS : Double.NaN, "ops/s", tick,
                Probe.extra("wall_ms", wallS * 1e3, "schedule_ms", (t1 - t0) / 1e6,
                        "max_delay_ms", maxDelay / 1e6));
        Probe.emit("expire_overrun_ms", a.n, ok ? (end - (t1 + maxDelay)) / 1e6 : Double.NaN, "ms",
                tick);
        Probe.stop(t);
    }

    void memory(long tick) throws InterruptedException {
        HashedWheelTimer t = Probe.timer(tick, a.wheel);
        t.start();
        t.newTimeout(NOTHING, 1, TimeUnit.HOURS).cancel();  // internals exist before the baseline
        Probe.waitPendingZero(t, 10_000);
        Probe.settleHeap();
        long used0 = Probe.usedHeap();
        Timeout[] refs = new Timeout[a.n];
        Probe.settleHeap();
        long used1 = Probe.usedHeap();
        for (int i = 0; i < a.n; i++) {
            refs[i] = t.newTimeout(NOTHING, 1, TimeUnit.HOURS);
        }
        Probe.sleepMs(Math.max(300, (a.n / 100_000 + 3) * tick));
        Probe.settleHeap();
        long used2 = Probe.usedHeap();
        Probe.emit("bytes_per_pending_timeout", a.n, (double) (used2 - used1) / a.n, "bytes", tick,
                Probe.extra("ref_array_subtracted", true, "task", "shared_noop",
                        "pending", t.pendingTimeouts()));
        Probe.emit("bytes_per_pending_timeout_incl_ref_array", a.n, (double) (used2 - used0) / a.n,
                "bytes", tick, Probe.extra("ref_array_subtracted", false,
                        "ref_array_bytes", used1 - used0));
        Probe.cancelAll(refs);  // also keeps refs reachable through the measurement
        Probe.waitPendingZero(t, 60_000);
        Probe.stop(t);
    }

    /** Lateness of latenessN timeouts with delays uniform in [lo, hi] ns, emitted as prefix_*. */
    void lateness(SplittableRandom rnd, long tick, long lo, long hi, String prefix)
            throws InterruptedException {
        HashedWheelTimer t = Probe.timer(tick, a.wheel);
        t.start();
        Probe.sleepMs(50);
        int m = a.latenessN;
        long[] late = new long[m];
        CountDownLatch done = new CountDownLatch(m);
        long[] d = Probe.delays(rnd, m, lo, hi + 1);
        for (int i = 0; i < m; i++) {
            final int k = i;
            final long deadline = System.nanoTime() + d[i];
            t.newTimeout(x -> {
                late[k] = System.nanoTime() - deadline;
                done.countDown();
            }, d[i], TimeUnit.NANOSECONDS);
        }
        if (!done.await(hi / Probe.SEC + 30, TimeUnit.SECONDS)) {
            Probe.log("%s: not all timeouts fired within 30 s of the longest delay", prefix);
        }
        Probe.stop(t);
        Arrays.sort(late);
        var extra = prefix.equals("lateness") ? null
                : Probe.extra("min_delay_ms", lo / Probe.MS, "max_delay_ms", hi / Probe.MS);
        Probe.emit(prefix + "_p50_us", m, late[(int) Math.floor(0.50 * (m - 1))] / 1e3, "us", tick, extra);
        Probe.emit(prefix + "_p99_us", m, late[(int) Math.floor(0.99 * (m - 1))] / 1e3, "us", tick, extra);
        Probe.emit(prefix + "_max_us", m, late[m - 1] / 1e3, "us", tick, extra);
        Probe.emit(prefix + "_min_us", m, late[0] / 1e3, "us", tick, extra);
    }

    void idle() throws InterruptedException {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long sleep = Math.round(a.idleSecs * 1000);
        Probe.settleHeap();
        Probe.sleepMs(300);
        long p0 = os.getProcessCpuTime();
        long w0 = System.nanoTime();
        Probe.sleepMs(sleep);
        long p1 = os.getProcessCpuTime();
        long w1 = System.nanoTime();
        Probe.emit("idle_cpu_ms_per_s_no_timer", 0, (p1 - p0) / 1e6 / ((w1 - w0) / 1e9), "ms/s", 0,
                Probe.extra("note", "process baseline with no timer"));
        for (long tick : a.idleTicks) {
            HashedWheelTimer t = Probe.timer(tick, a.wheel);
            Thread worker = Probe.WORKERS.last();
            t.start();
            Probe.sleepMs(300);
            long pc0 = os.getProcessCpuTime();
            long tc0 = Probe.cpuNs(worker);
            long s0 = System.nanoTime();
            Probe.sleepMs(sleep);
            long pc1 = os.getProcessCpuTime();
            long tc1 = Probe.cpuNs(worker);
            double secs = (System.nanoTime() - s0) / 1e9;
            Probe.emit("idle_cpu_ms_per_s", 0, (pc1 - pc0) / 1e6 / secs, "ms/s", tick,
                    Probe.extra("scope", "process", "secs", secs));
            Probe.emit("idle_worker_cpu_ms_per_s", 0, (tc1 - tc0) / 1e6 / secs, "ms/s", tick,
                    Probe.extra("scope", "worker_thread"));
            Probe.stop(t);
        }
    }

    void run() throws InterruptedException {
        SplittableRandom rnd = new SplittableRandom(a.seed);
        if (a.wants("schedule") || a.wants("cancel") || a.wants("expire")) {
            warmUp(rnd.split());
        }
        for (long tick : a.ticks) {
            if (a.wants("schedule") || a.wants("cancel")) {
                scheduleAndCancel(rnd.split(), tick);
            }
            if (a.wants("expire")) {
                expire(rnd.split(), tick);
            }
            if (a.wants("memory")) {
                memory(tick);
            }
        }
        if (a.wants("lateness")) {
            for (long tick : a.latenessTicks) {
                lateness(rnd.split(), tick, 10 * Probe.MS, 2000 * Probe.MS, "lateness");
            }
        }
        if (a.wants("upperlateness")) {
            for (long tick : a.upperTicks) {
                long turn = tick * Probe.MS * a.wheel;
                lateness(rnd.split(), tick, turn + tick * Probe.MS, 4 * turn, "upper_lateness");
            }
        }
        if (a.wants("idle")) {
            idle();
        }
        PendingMetrics pending = new PendingMetrics(a);
        if (a.wants("longdelay")) {
            for (long tick : a.longTicks) {
                pending.longDelay(rnd.split(), tick);
            }
        }
        if (a.wants("scaling")) {
            pending.scaling(rnd.split());
        }
    }

    public static void main(String[] argv) throws Exception {
        BenchArgs args = BenchArgs.parse(argv);
        Version v = Version.identify().get("netty-common");
        Probe.log("netty %s, java %s, cpus=%d, max heap %d MiB, n=%d, metrics=%s, ticks=%s, wheel=%d",
                v == null ? "?" : v.artifactVersion(), System.getProperty("java.version"),
                Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() >> 20,
                args.n, args.metrics, Arrays.toString(args.ticks), args.wheel);
        long start = System.nanoTime();
        new NettyTimerBench(args).run();
        Probe.log("done in %d ms", (System.nanoTime() - start) / Probe.MS);
        System.exit(0);
    }
}
