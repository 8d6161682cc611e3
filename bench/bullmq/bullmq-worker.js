// SPDX-License-Identifier: Apache-2.0
// BullMQ peer, worker side: one Worker (concurrency --concurrency, a no-op processor) until --n
// jobs completed or --secs passed. Lateness is processing start minus the job's timestamp plus
// its delay. Prints {delivered, secs, delivered_per_s, lateness_ms: {p50, p99, max, n}}; the
// clock starts when the worker is connected and about to run.
'use strict';
const { Worker } = require('bullmq');
const { parseArgs, redisSpec, emitDelivered, ready, run } = require('./lib');

const o = parseArgs({
  ...redisSpec('fleet'),
  n: [100000, 0, 1e8],
  concurrency: [50, 1, 10000],
  secs: [600, 0.1, 86400],
});

async function main() {
  const lateness = [];
  let delivered = 0;
  let start = 0;
  let last = 0;
  let finish;
  const done = new Promise((resolve) => (finish = resolve));
  const worker = new Worker(
    o.queue,
    async (job) => {
      lateness.push(Date.now() - (job.timestamp + (job.opts.delay || 0)));
    },
    { connection: { host: o.host, port: o.port }, concurrency: o.concurrency, autorun: false },
  );
  worker.on('error', (e) => process.stderr.write(`worker error: ${e.message}\n`));
  worker.on('completed', () => {
    last = performance.now();
    if (++delivered === o.n) finish();
  });
  await worker.waitUntilReady();
  ready();
  start = performance.now();
  worker.run();
  const timer = setTimeout(finish, o.secs * 1000);
  await done;
  clearTimeout(timer);
  const end = o.n > 0 && delivered >= o.n ? last : performance.now();
  emitDelivered('bullmq', { delivered, n: o.n, start, end, lateness });
  await worker.close(true);
}

run('bullmq-worker', main);
