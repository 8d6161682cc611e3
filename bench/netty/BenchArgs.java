// SPDX-License-Identifier: Apache-2.0
// Command line of NettyTimerBench: the option names, defaults and ranges of wheel-bench
// (apps/wheel-bench/main.cc), so that scripts/compare-netty.sh passes one argument list to both.
// A bad option prints its name and accepted range on stderr and exits 2. Its number parsers
// (whole, real) serve every program of the harness: they throw BadOption, which each program's
// main turns into its own "Program: message" and exit 2.

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

final class BenchArgs {
    static final List<String> KNOWN_METRICS = List.of("schedule", "cancel", "expire", "memory",
            "lateness", "idle", "longdelay", "upperlateness", "scaling");

    int n = 1_000_000;
    Set<String> metrics = new LinkedHashSet<>(
            List.of("schedule", "cancel", "expire", "memory", "lateness", "idle"));
    long[] ticks = {1, 100};
    int wheel = 512;
    int warmupN = 200_000;
    int warmupRounds = 3;
    long[] latenessTicks = {1, 10};
    int latenessN = 10_000;
    long[] idleTicks = {100, 1};
    double idleSecs = 5.0;
    long seed = 42;
    int longN = 1_000_000;
    long[] longTicks = {1};
    double longSecs = 10.0;
    long longMinS = 60;
    long longMaxS = 86_400;
    long[] upperTicks = {1};
    long[] scalingN = {1_000, 10_000, 100_000, 1_000_000, 10_000_000};
    long scalingTick = 100;
    long scalingCostTick = 1;
    double scalingSecs = 2.0;

    boolean wants(String metric) {
        return metrics.contains(metric);
    }

    /** A value that is not a number or not in range; the message names the option and range. */
    static final class BadOption extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        BadOption(String message) {
            super(message);
        }
    }

    static void fail(String message) {
        System.err.println("NettyTimerBench: " + message);
        System.err.println("Run with --help for more information.");
        System.exit(2);
    }

    static final String HELP = String.join("\n",
            "NettyTimerBench: Netty's HashedWheelTimer with wheel-bench's metrics and JSON lines",
            "  --n N                  timeouts for schedule/cancel/expire/memory (1000000)",
            "  --metrics LIST         " + String.join(",", KNOWN_METRICS),
            "                         (default: the first six)",
            "  --ticks LIST           tick(s) in ms for schedule/cancel/expire/memory (1,100)",
            "  --wheel N              ticks per wheel (512)",
            "  --warmup-n N           timeouts per warm-up round (200000)",
            "  --warmup-rounds N      warm-up rounds (3)",
            "  --lateness-ticks LIST  tick(s) in ms for the lateness test (1,10)",
            "  --lateness-n N         timeouts in the lateness tests (10000)",
            "  --idle-ticks LIST      tick(s) in ms for the idle-CPU test (100,1)",
            "  --idle-secs S          seconds per idle-CPU measurement (5)",
            "  --long-n N             pending timeouts in the longdelay test (1000000)",
            "  --long-ticks LIST      tick(s) in ms for the longdelay test (1)",
            "  --long-secs S          seconds of worker CPU measured in longdelay (10)",
            "  --long-min-s S         shortest longdelay delay, seconds (60)",
            "  --long-max-s S         longest longdelay delay, seconds (86400)",
            "  --upper-ticks LIST     tick(s) in ms for upperlateness: delays of 1..4 turns (1)",
            "  --scaling-n LIST       pending counts for the scaling metric (10^3..10^7)",
            "  --scaling-tick MS      tick for scaling's schedule/cancel cost (100)",
            "  --scaling-cost-tick MS tick for scaling's worker cost per tick (1)",
            "  --scaling-secs S       seconds of worker CPU per pending count in scaling (2)",
            "  --seed N               RNG seed (42)");

    static BenchArgs parse(String[] argv) {
        try {
            return parseOrThrow(argv);
        } catch (BadOption e) {
            fail(e.getMessage());
            return null;  // not reached: fail() exits
        }
    }

    private static BenchArgs parseOrThrow(String[] argv) {
        BenchArgs a = new BenchArgs();
        for (int i = 0; i < argv.length; i++) {
            String name = argv[i];
            if (name.equals("--help") || name.equals("-h")) {
                System.out.println(HELP);
                System.exit(0);
            }
            if (i + 1 == argv.length) {
                fail(name + " needs a value");
            }
            String v = argv[++i];
            switch (name) {
                case "--n" -> a.n = (int) whole(name, v, 1, 100_000_000);
                case "--metrics" -> a.metrics = metricList(v);
                case "--ticks" -> a.ticks = wholeList(name, v, 1, 60_000);
                case "--wheel" -> a.wheel = (int) whole(name, v, 1, 1 << 30);
                case "--warmup-n" -> a.warmupN = (int) whole(name, v, 0, 100_000_000);
                case "--warmup-rounds" -> a.warmupRounds = (int) whole(name, v, 0, 1_000);
                case "--lateness-ticks" -> a.latenessTicks = wholeList(name, v, 1, 60_000);
                case "--lateness-n" -> a.latenessN = (int) whole(name, v, 1, 100_000_000);
                case "--idle-ticks" -> a.idleTicks = wholeList(name, v, 1, 60_000);
                case "--idle-secs" -> a.idleSecs = real(name, v, 0.1, 3600);
                case "--seed" -> a.seed = whole(name, v, Long.MIN_VALUE, Long.MAX_VALUE);
                case "--long-n" -> a.longN = (int) whole(name, v, 1, 100_000_000);
                case "--long-ticks" -> a.longTicks = wholeList(name, v, 1, 60_000);
                case "--long-secs" -> a.longSecs = real(name, v, 0.1, 3600);
                case "--long-min-s" -> a.longMinS = whole(name, v, 1, 100_000_000);
                case "--long-max-s" -> a.longMaxS = whole(name, v, 1, 100_000_000);
                case "--upper-ticks" -> a.upperTicks = wholeList(name, v, 1, 1_000);
                case "--scaling-n" -> a.scalingN = wholeList(name, v, 1, 100_000_000);
                case "--scaling-tick" -> a.scalingTick = whole(name, v, 1, 60_000);
                case "--scaling-cost-tick" -> a.scalingCostTick = whole(name, v, 1, 60_000);
                case "--scaling-secs" -> a.scalingSecs = real(name, v, 0.1, 3600);
                default -> fail("unknown option " + name);
            }
        }
        if (a.longMaxS < a.longMinS) {
            fail("--long-max-s (" + a.longMaxS + ") must be at least --long-min-s (" + a.longMinS + ")");
        }
        return a;
    }

    /** v as a whole number in [lo, hi]; BadOption naming the option and range otherwise. */
    static long whole(String name, String v, long lo, long hi) {
        long x;
        try {
            x = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new BadOption(name + ": " + v + " is not a whole number");
        }
        if (x < lo || x > hi) {
            throw new BadOption(name + ": value " + v + " not in range " + lo + " to " + hi);
        }
        return x;
    }

    /** v as a real number in [lo, hi] (NaN is not); BadOption otherwise. */
    static double real(String name, String v, double lo, double hi) {
        double x;
        try {
            x = Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new BadOption(name + ": " + v + " is not a number");
        }
        if (!(x >= lo && x <= hi)) {
            throw new BadOption(name + ": value " + v + " not in range " + lo + " to " + hi);
        }
        return x;
    }

    private static long[] wholeList(String name, String v, long lo, long hi) {
        String[] parts = v.split(",");
        long[] out = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = whole(name, parts[i], lo, hi);
        }
        return out;
    }

    private static Set<String> metricList(String v) {
        Set<String> out = new LinkedHashSet<>();
        List<String> unknown = new ArrayList<>();
        for (String m : v.split(",")) {
            (KNOWN_METRICS.contains(m.trim()) ? out : unknown).add(m.trim());
        }
        if (!unknown.isEmpty()) {
            fail("--metrics: " + unknown + " not in " + KNOWN_METRICS);
        }
        return out;
    }
}
