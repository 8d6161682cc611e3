// SPDX-License-Identifier: Apache-2.0
// NettyTimerBench's metrics over large pending sets, as apps/wheel-bench/pending_metrics.h runs
// them: longdelay (the worker thread's CPU while N timeouts of 1 min .. 24 h wait and none
// expires) and scaling (schedule/cancel cost per operation against the pending count, then the
// worker's CPU per tick with that many long timeouts pending).

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

final class PendingMetrics {
    private final BenchArgs a;

    PendingMetrics(BenchArgs args) {
        this.a = args;
    }

    /** Worker CPU ms per second of wall time, the wall seconds measured, pending at the end. */
    record WorkerLoad(double cpuMsPerS, double secs, long pending) {}

    /**
     * A timer at tickMs holding `count` no-op timeouts with delays uniform in
     * [--long-min-s, --long-max-s]; once the worker has filed them all (100,000 a tick at most)
     * and the GC settled, its thread's CPU time over `secs` seconds of wall time.
     */
    WorkerLoad workerLoad(SplittableRandom rnd, int count, long tickMs, double secs)
            throws InterruptedException {
        HashedWheelTimer t = Probe.timer(tickMs, a.wheel);
        Thread worker = Probe.WORKERS.last();
        t.start();
        long lo = a.longMinS * Probe.SEC;
        long hi = a.longMaxS * Probe.SEC;
        Timeout[] keep = new Timeout[count];
        for (int i = 0; i < count; i++) {
            keep[i] = t.newTimeout(NettyTimerBench.NOTHING, rnd.nextLong(lo, hi + 1),
                    TimeUnit.NANOSECONDS);
        }
        Probe.sleepMs(Math.max(1000, (count / 100_000 + 2) * tickMs * 2));
        Probe.settleHeap();
        long c0 = Probe.cpuNs(worker);
        long w0 = System.nanoTime();
        Probe.sleepMs(Math.round(secs * 1000));
        long c1 = Probe.cpuNs(worker);
        double wall = (System.nanoTime() - w0) / 1e9;
        WorkerLoad load = new WorkerLoad(c0 < 0 || c1 < 0 ? Double.NaN : (c1 - c0) / 1e6 / wall,
                wall, t.pendingTimeouts());
        Probe.cancelAll(keep);
        Probe.stop(t);
        return load;
    }

    void longDelay(SplittableRandom rnd, long tickMs) throws InterruptedException {
        WorkerLoad w = workerLoad(rnd, a.longN, tickMs, a.longSecs);
        Probe.emit("long_delay_worker_cpu_ms_per_s", a.longN, w.cpuMsPerS(), "ms/s", tickMs,
                Probe.extra("min_s", a.longMinS, "max_s", a.longMaxS, "secs", w.secs(),
                        "pending", w.pending()));
    }

    void scaling(SplittableRandom rnd) throws InterruptedException {
        for (long count : a.scalingN) {
            int n = (int) count;
            long[] d = Probe.delays(rnd, n, Probe.SEC, 60 * Probe.SEC);
            int[] order = new int[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            for (int i = n - 1; i > 0; i--) {  // Fisher-Yates: cancel in random order
                int j = rnd.nextInt(i + 1);
                int x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
            Timeout[] refs = new Timeout[n];
            HashedWheelTimer t = Probe.timer(a.scalingTick, a.wheel);
            t.start();
            // Untimed round at the same N first: code compiled, memory touched.
            for (int i = 0; i < n; i++) {
                refs[i] = t.newTimeout(NettyTimerBench.NOTHING, d[i], TimeUnit.NANOSECONDS);
            }
            Probe.cancelAll(refs);
            Probe.waitPendingZero(t, 120_000);
            Probe.settleHeap();
            long s0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                refs[i] = t.newTimeout(NettyTimerBench.NOTHING, d[i], TimeUnit.NANOSECONDS);
            }
            long s1 = System.nanoTime();
            Probe.sleepMs(Math.max(200, (count / 100_000 + 3) * a.scalingTick));
            long c0 = System.nanoTime();
            for (int i : order) {
                refs[i].cancel();
            }
            long c1 = System.nanoTime();
            long zeroAt = Probe.waitPendingZero(t, 120_000);
            double schedNs = (double) (s1 - s0) / count;
            double cancelNs = (double) (c1 - c0) / count;
            var extra = Probe.extra("tick_ms_used", a.scalingTick, "order", "cancel in random order");
            Probe.emit("scaling_schedule_ns_per_op", count, schedNs, "ns", a.scalingTick, extra);
            Probe.emit("scaling_cancel_ns_per_op", count, cancelNs, "ns", a.scalingTick, extra);
            Probe.emit("scaling_schedule_cancel_ns_per_op", count, schedNs + cancelNs, "ns",
                    a.scalingTick, Probe.extra("cancel_drain_ms",
                            zeroAt < 0 ? null : (Object) ((zeroAt - c1) / 1e6)));
            refs = null;
            Probe.stop(t);

            long tick = a.scalingCostTick;
            WorkerLoad w = workerLoad(rnd, n, tick, a.scalingSecs);
            var costExtra = Probe.extra("min_s", a.longMinS, "max_s", a.longMaxS, "secs", w.secs(),
                    "pending", w.pending());
            Probe.emit("scaling_worker_cpu_ms_per_s", count, w.cpuMsPerS(), "ms/s", tick, costExtra);
            // ms of CPU per second / ticks per second = microseconds of CPU per tick.
            Probe.emit("scaling_worker_us_per_tick", count, w.cpuMsPerS() * tick, "us", tick,
                    costExtra);
        }
    }
}
