// SPDX-License-Identifier: Apache-2.0
// One round of one peer for scripts/compare-fleet.sh, on a fresh redis-server (AOF everysec) in
// its own directory, in five phases, each on the same Redis:
//   add       --n delayed jobs (delays --min/--max-delay-ms), nobody consuming: added/s
//   deliver   once every one of them is due, one worker takes them all: delivered/s
//   deliver in process (wheel-jobs, one node, with --jobs-load): --n more jobs added the same
//             way, and once all are due `wheel-jobs-load redis-deliver` takes them through
//             wheel::jobs's RedisStore in its own process, no node between it and Redis (as
//             BullMQ's Worker runs in its process): delivered/s
//   e2e       end to end, the workload: the worker runs first, then a producer adds --n
//             jobs (same delays) as fast as the peer takes them; the phase lasts until every job
//             was delivered (reserved + deleted), at most --e2e-timeout-secs (else it fails):
//             Redis commands per delivered job, lateness p50/p99/max, delivered/s
//   lateness  a worker runs while a producer adds --lat-n jobs at --lat-rate a second (same
//             delays): lateness p50/p99/max, Redis commands per job at that pace
//   idle      --n jobs due in an hour, the worker connected: Redis commands a second
// With --nodes K (wheel-jobs only) it runs K nodes and only add, deliver and e2e (the fleet
// curve). Redis commands are INFO commandstats deltas: every call Redis counts, the EVALSHA of a
// script and each redis.call inside it alike. Every phase with CPU figures says which part
// saturated first (cpu-watch.js). Prints JSON lines {peer, round, nodes, metric, value, ...}.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const { parseArgs, sleep } = require('./lib');
const P = require('./procs');
const { CpuWatch } = require('./cpu-watch');

const o = parseArgs({
  peer: ['bullmq'],
  round: [1, 1, 1000],
  n: [100000, 1, 1e7],
  'min-delay-ms': [1000, 0, 864e5],
  'max-delay-ms': [10000, 1, 864e5],
  'lat-n': [10000, 1, 1e7],
  'lat-rate': [1000, 1, 1e6],
  'idle-secs': [30, 1, 3600],
  nodes: [0, 0, 16],
  'wheel-jobs': [''],
  'jobs-load': [''],  // wheel-jobs-load: the deliver-in-process phase (wheel-jobs, one node)
  'node-args': [''],
  'work-dir': [os.tmpdir()],
  'timeout-secs': [900, 10, 86400],
  'e2e-timeout-secs': [300, 10, 86400],
  // jobs a worker has in flight: BullMQ's and the plain worker's --concurrency, the beanstalk
  // worker's --connections (one reserve each)
  concurrency: [50, 1, 10000],
});
const PEERS = {
  bullmq: { producer: 'bullmq-producer.js', worker: 'bullmq-worker.js' },
  plain: { producer: 'plain-producer.js', worker: 'plain-worker.js' },
  'wheel-jobs': { producer: 'beanstalk-producer.js', worker: 'beanstalk-worker.js' },
};
const peer = PEERS[o.peer];
if (!peer) {
  process.stderr.write(`--peer must be one of ${Object.keys(PEERS).join(', ')}\n`);
  process.exit(2);
}
if (o.peer === 'wheel-jobs' && !o['wheel-jobs']) {
  process.stderr.write('--peer wheel-jobs needs --wheel-jobs PATH\n');
  process.exit(2);
}
if (o.nodes > 0 && o.peer !== 'wheel-jobs') {
  process.stderr.write('--nodes is for --peer wheel-jobs only\n');
  process.exit(2);
}
const timeoutMs = o['timeout-secs'] * 1000;
const date = new Date().toISOString();

function out(metric, value, extra = {}) {
  const nodes = o.peer === 'wheel-jobs' ? Math.max(1, o.nodes) : null;
  process.stdout.write(JSON.stringify({ date, peer: o.peer, round: o.round, nodes,
    concurrency: o.concurrency, metric, value, ...extra }) + '\n');
}

// Runs fn() and returns its result with the Redis commands used meanwhile, the wall time and
// the CPU of every process (Redis, the nodes, the drivers fn starts through driver()).
async function measured(env, fn) {
  env.clients = [];
  const watch = new CpuWatch(() => [
    { label: 'redis', pid: env.redis.child.pid },
    ...env.nodes.map((n) => ({ label: 'node', pid: n.child.pid })),
    ...env.clients,
  ]).start();
  const s0 = await P.commandStats(env.redis.client);
  const t0 = performance.now();
  const result = await fn();
  const wall = (performance.now() - t0) / 1000;
  const s1 = await P.commandStats(env.redis.client);
  // A driver's own total (process.cpuUsage at its end) outlives its /proc entry.
  const own = Object.fromEntries(env.clients.filter((c) => c.cpuSecs !== undefined)
    .map((c) => [c.pid, c.cpuSecs]));
  return { result, wall, commands: P.commandDelta(s0, s1), cpu: watch.stop(own) };
}

// The CPU fields of a phase's JSON line: averages as % of one core (Redis, each node, the
// clients together), each part's busiest second, the machine's share busy (all processes, % of
// all cores: others' load shows here) and the part that saturated first.
function cpuFields(m) {
  const sum = (xs) => (xs || []).reduce((a, b) => a + b, 0);
  const { avg, peak } = m.cpu;
  return { redis_cpu_pct: avg.redis[0], node_cpu_pct: avg.node || [],
    client_cpu_pct: sum(avg.producer) + sum(avg.worker), peak_cpu_pct: peak,
    peak_total_cpu_pct: m.cpu.peak_total, machine_cpu_pct: m.cpu.machine_pct,
    peak_machine_cpu_pct: m.cpu.peak_machine_pct, saturates: m.cpu.saturates };
}

// Starts a driver (role producer or worker) whose CPU the phase's watch counts; resolves
// {child, done} once it is READY.
async function driver(env, role, args, timeout = timeoutMs) {
  const inFlight = role !== 'worker' ? []
    : [o.peer === 'wheel-jobs' ? '--connections' : '--concurrency', String(o.concurrency)];
  const d = await P.startDriver(peer[role], [...env.target, ...inFlight, ...args], timeout);
  const part = { label: role, pid: d.child.pid };
  (env.clients || []).push(part);
  d.done.then((r) => (part.cpuSecs = r.cpu_secs), () => {});
  return d;
}

async function run(env, role, args) {
  return (await driver(env, role, args)).done;
}

// --n jobs added, then, once all are due, delivered by wheel-jobs-load redis-deliver (wheel::jobs
// in the worker's process) with --concurrency reserves in flight.
async function deliverInProcess(env, delays) {
  await run(env, 'producer', ['--n', String(o.n), ...delays]);
  await sleep(o['max-delay-ms'] + 500);
  const m = await measured(env, async () => {
    const d = await P.startDriver(o['jobs-load'], ['redis-deliver', '--store',
      `redis://127.0.0.1:${env.redis.port}`, '--tube', 'fleet', '--count', String(o.n),
      '--concurrency', String(o.concurrency), '--timeout', `${o['timeout-secs'] - 10}s`],
    timeoutMs);
    const part = { label: 'worker', pid: d.child.pid };
    env.clients.push(part);
    const r = await d.done;
    part.cpuSecs = r.cpu_secs;
    return r;
  });
  if (!m.result.complete) throw new Error(`deliver in process: only ${m.result.delivered} of ${o.n}`);
  out('lib_delivered_per_s', Math.round(m.result.delivered_per_s), { secs: m.result.secs,
    errors: m.result.errors, ...cpuFields(m) });
  out('lib_deliver_commands_per_job', m.commands.total / o.n, { by: m.commands.by });
}

// The workload end to end: the worker runs first, then --n jobs are added as fast as the
// peer takes them; the phase ends when every job was delivered, or fails after
// --e2e-timeout-secs. Delivered/s is --n over the worker's time from its first request to the
// last delete (the delays spread the due times over add time + up to --max-delay-ms, so this is
// the pace of the workload unless a part falls behind; the lateness says whether one did).
async function endToEnd(env, delays) {
  const limit = o['e2e-timeout-secs'];
  const e2e = await measured(env, async () => {
    const w = await driver(env, 'worker', ['--n', String(o.n), '--secs', String(limit)],
      (limit + 60) * 1000);
    const p = await run(env, 'producer', ['--n', String(o.n), ...delays]);
    return { p, w: await w.done };
  });
  const { p, w } = e2e.result;
  const at = { n: o.n, secs: w.secs, added_per_s: p.added_per_s, add_secs: p.secs,
    errors: w.errors, put_errors: p.errors };
  if (!w.complete) {
    out('e2e_failed', w.delivered, { ...at, timeout_secs: limit, ...cpuFields(e2e) });
    throw new Error(`e2e: only ${w.delivered} of ${o.n} delivered in ${limit} s`);
  }
  out('e2e_delivered_per_s', w.delivered_per_s, { ...at, ...cpuFields(e2e) });
  const l = w.lateness_ms;
  out('e2e_lateness_p50_ms', l.p50, at);
  out('e2e_lateness_p99_ms', l.p99, at);
  out('e2e_lateness_max_ms', l.max, at);
  out('e2e_commands_per_job', e2e.commands.total / o.n, { ...at, by: e2e.commands.by });
}

async function main() {
  const redis = await P.startRedis(o['work-dir']);
  const env = { redis, nodes: [], target: [] };
  try {
    if (o.peer === 'wheel-jobs') {
      const k = Math.max(1, o.nodes);
      const extra = o['node-args'] ? o['node-args'].split(' ') : [];
      for (let i = 0; i < k; i++) {
        env.nodes.push(await P.startNode(o['wheel-jobs'],
          ['--store', `redis://127.0.0.1:${redis.port}`, ...extra]));
      }
      env.target = ['--addrs', env.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')];
    } else {
      env.target = ['--port', String(redis.port)];
    }
    const delays = ['--min-delay-ms', o['min-delay-ms'], '--max-delay-ms', o['max-delay-ms']]
      .map(String);

    // add
    const add = await measured(env, () => run(env, 'producer', ['--n', String(o.n), ...delays]));
    const addEnd = Date.now();
    out('added_per_s', add.result.added_per_s, { secs: add.result.secs, errors: add.result.errors,
      ...cpuFields(add) });
    out('add_commands_per_job', add.commands.total / o.n, { by: add.commands.by });

    // deliver: every job is due by addEnd + max delay
    await sleep(Math.max(0, addEnd + o['max-delay-ms'] + 500 - Date.now()));
    const del = await measured(env, () => run(env, 'worker',
      ['--n', String(o.n), '--secs', String(o['timeout-secs'] - 10)]));
    if (!del.result.complete) throw new Error(`deliver: only ${del.result.delivered} of ${o.n}`);
    out('delivered_per_s', del.result.delivered_per_s, { secs: del.result.secs,
      errors: del.result.errors, ...cpuFields(del) });
    out('deliver_commands_per_job', del.commands.total / o.n, { by: del.commands.by });
    out('burst_commands_per_job', (add.commands.total + del.commands.total) / o.n);
    if (o['jobs-load'] && o.peer === 'wheel-jobs' && o.nodes === 0) await deliverInProcess(env, delays);

    await endToEnd(env, delays);
    if (o.nodes > 0) return;

    // lateness: worker first, then the paced producer
    const lat = await measured(env, async () => {
      const w = await driver(env, 'worker', ['--n', String(o['lat-n']),
        '--secs', String(o['timeout-secs'] - 10)]);
      const p = await run(env, 'producer', ['--n', String(o['lat-n']), '--rate',
        String(o['lat-rate']), ...delays]);
      return { p, w: await w.done };
    });
    if (!lat.result.w.complete) {
      throw new Error(`lateness: only ${lat.result.w.delivered} of ${o['lat-n']}`);
    }
    const l = lat.result.w.lateness_ms;
    const at = { lat_n: o['lat-n'], lat_rate: o['lat-rate'], added_per_s: lat.result.p.added_per_s,
      errors: lat.result.w.errors, put_errors: lat.result.p.errors };
    out('lateness_p50_ms', l.p50, at);
    out('lateness_p99_ms', l.p99, at);
    out('lateness_max_ms', l.max, at);
    out('commands_per_job', lat.commands.total / o['lat-n'], { ...at, by: lat.commands.by });

    // idle: --n jobs an hour away, the worker connected and waiting
    await run(env, 'producer', ['--n', String(o.n), '--min-delay-ms', '3600000',
      '--max-delay-ms', '3660000']);
    const w = await driver(env, 'worker', ['--n', '0', '--secs', String(o['idle-secs'] + 3)]);
    await sleep(1000); // past the worker's start-up commands
    const idle = await measured(env, () => sleep(o['idle-secs'] * 1000));
    await w.done;
    const { redis_cpu_pct: redisPct, node_cpu_pct: nodePct } = cpuFields(idle);
    out('idle_commands_per_s', idle.commands.total / idle.wall, { secs: idle.wall,
      by: idle.commands.by, redis_cpu_pct: redisPct, node_cpu_pct: nodePct });
  } finally {
    for (const n of env.nodes) await P.stop(n.child);
    await P.stopRedis(redis);
  }
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`run-peer ${o.peer} round ${o.round}: ${e.stack || e}\n`);
  process.exit(1);
});
