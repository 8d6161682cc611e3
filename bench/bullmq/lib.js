// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the fleet benchmark drivers (scripts/compare-fleet.sh): option parsing with
// ranges, the job body, percentiles, and the one JSON line each driver prints.
'use strict';

// Parses --name value pairs against spec {name: [default, min, max]} (numbers) or
// {name: [default]} (strings). A bad or unknown option exits 2 naming it and its range.
function parseArgs(spec, argv = process.argv.slice(2)) {
  const out = {};
  for (const [k, v] of Object.entries(spec)) out[k] = v[0];
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '');
    const s = spec[name];
    if (!argv[i].startsWith('--') || !s || i + 1 >= argv.length) {
      usage(`unknown option or missing value: ${argv[i]}`, spec);
    }
    const raw = argv[i + 1];
    if (s.length === 1) {
      out[name] = raw;
      continue;
    }
    const n = Number(raw);
    if (!Number.isFinite(n) || n < s[1] || n > s[2]) {
      usage(`--${name} must be a number from ${s[1]} to ${s[2]}, not '${raw}'`, spec);
    }
    out[name] = n;
  }
  return out;
}

function usage(message, spec) {
  const opts = Object.entries(spec)
    .map(([k, v]) => `  --${k} ${v.length === 1 ? `TEXT (${v[0]})` : `${v[1]}..${v[2]} (${v[0]})`}`)
    .join('\n');
  process.stderr.write(`${message}\noptions:\n${opts}\n`);
  process.exit(2);
}

// A body of exactly `bytes` bytes that starts with the job's due time in epoch milliseconds, so
// a consumer measures lateness from the body alone: "<due_ms>:xxxx...".
function makeBody(dueMs, bytes) {
  const head = `${dueMs}:`;
  return head.length >= bytes ? head : head + 'x'.repeat(bytes - head.length);
}

function dueOf(body) {
  const s = typeof body === 'string' ? body : body.toString('latin1', 0, 20);
  return Number(s.slice(0, s.indexOf(':')));
}

// A delay drawn uniformly from [minMs, maxMs].
function randomDelay(minMs, maxMs) {
  return minMs + Math.floor(Math.random() * (maxMs - minMs + 1));
}

// Nearest-rank percentiles of a list of numbers (milliseconds): {p50, p99, max, n}.
function percentiles(values) {
  if (values.length === 0) return { p50: null, p99: null, max: null, n: 0 };
  const v = Float64Array.from(values).sort();
  const at = (p) => v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
  const r = (x) => Math.round(x * 10) / 10;
  return { p50: r(at(50)), p99: r(at(99)), max: r(v[v.length - 1]), n: v.length };
}

// Writes one JSON line to stdout, with the CPU seconds this process used; the orchestrator
// reads the last line a driver printed.
function emit(record) {
  const u = process.cpuUsage();
  record.cpu_secs = Math.round((u.user + u.system) / 1e3) / 1e3;
  process.stdout.write(JSON.stringify(record) + '\n');
}

// Tells the orchestrator the driver is connected and about to start its clock.
function ready() {
  process.stderr.write('READY\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The options every producer takes after its connection ones: how many jobs, their delays and
// body size, and the pace (--rate 0: as fast as the peer allows).
const producerSpec = {
  n: [100000, 1, 1e8],
  'min-delay-ms': [1000, 0, 864e5],
  'max-delay-ms': [10000, 0, 864e5],
  'body-bytes': [100, 16, 1 << 20],
};

// The connection options of the Redis-backed peers (BullMQ, plain pattern).
function redisSpec(queue) {
  return { host: ['127.0.0.1'], port: [6379, 1, 65535], queue: [queue] };
}

// Exits 2 unless --max-delay-ms >= --min-delay-ms (each is range-checked by parseArgs).
function checkDelays(o) {
  if (o['max-delay-ms'] < o['min-delay-ms']) {
    process.stderr.write('--max-delay-ms must be at least --min-delay-ms\n');
    process.exit(2);
  }
}

// The jobs per batch of a Redis producer: --batch, or at a --rate about 20 batches a second.
function batchSize(o) {
  return o.rate > 0 ? Math.max(1, Math.min(o.batch, Math.round(o.rate / 20))) : o.batch;
}

// The options of a producer that adds in batches (the Redis-backed peers): --batch, --rate.
const batchSpec = { batch: [1000, 1, 100000], rate: [0, 0, 1e7] };

// Adds --n jobs in batches of batchSize(o) paced at --rate, after ready(): `addBatch(first, k)`
// stores jobs first .. first + k - 1 and resolves once they are stored. Returns {added, start}.
async function addInBatches(o, addBatch) {
  const batch = batchSize(o);
  ready();
  const start = performance.now();
  let added = 0;
  while (added < o.n) {
    const k = Math.min(batch, o.n - added);
    await addBatch(added, k);
    added += k;
    await pace(start, added, o.rate);
  }
  return { added, start };
}

// At --rate `rate` a second from `start` (performance.now()), waits until `count` jobs are due.
async function pace(start, count, rate) {
  if (rate <= 0) return;
  const wait = start + (count / rate) * 1000 - performance.now();
  if (wait > 0) await sleep(wait);
}

// The producer's record: {peer, role, added, secs, added_per_s, ...extra}, timed from `start`.
function emitAdded(peer, added, start, extra = {}) {
  const secs = (performance.now() - start) / 1000;
  emit({ peer, role: 'producer', added, secs, added_per_s: Math.round(added / secs), ...extra });
}

// The worker's record, the same for every peer: delivered, complete (all --n), secs from
// `start` to `end`, delivered_per_s, lateness_ms percentiles, ...extra.
function emitDelivered(peer, { delivered, n, start, end, lateness }, extra = {}) {
  const secs = (end - start) / 1000;
  emit({
    peer,
    role: 'worker',
    delivered,
    complete: delivered >= n,
    secs,
    delivered_per_s: Math.round(delivered / secs),
    lateness_ms: percentiles(lateness),
    ...extra,
  });
}

// Runs the driver's async main; an error is printed under the driver's name and exits 1.
function run(name, main) {
  main().catch((e) => {
    process.stderr.write(`${name}: ${e.stack || e}\n`);
    process.exit(1);
  });
}

module.exports = {
  parseArgs, makeBody, dueOf, randomDelay, percentiles, emit, ready, sleep, producerSpec,
  redisSpec, checkDelays, batchSize, batchSpec, addInBatches, pace, emitAdded, emitDelivered, run,
};
