// SPDX-License-Identifier: Apache-2.0
// BullMQ peer, producer side: adds --n delayed jobs with Queue.addBulk, as BullMQ's docs show
// (opts.delay in milliseconds; removeOnComplete so a processed job is deleted, as a beanstalk
// client deletes it). --rate 0 adds as fast as one awaited addBulk after another allows; a rate
// paces the batches against the start time. Prints {added, secs, added_per_s}.
'use strict';
const { Queue } = require('bullmq');
const { parseArgs, randomDelay, emit, ready, sleep } = require('./lib');

const o = parseArgs({
  host: ['127.0.0.1'],
  port: [6379, 1, 65535],
  queue: ['fleet'],
  n: [100000, 1, 1e8],
  'min-delay-ms': [1000, 0, 864e5],
  'max-delay-ms': [10000, 0, 864e5],
  'body-bytes': [100, 16, 1 << 20],
  batch: [1000, 1, 100000],
  rate: [0, 0, 1e7],
});
if (o['max-delay-ms'] < o['min-delay-ms']) {
  process.stderr.write('--max-delay-ms must be at least --min-delay-ms\n');
  process.exit(2);
}

async function main() {
  const queue = new Queue(o.queue, { connection: { host: o.host, port: o.port } });
  queue.on('error', (e) => process.stderr.write(`queue error: ${e.message}\n`));
  await queue.waitUntilReady();
  // The JSON of {b: "..."} is body-bytes long, the size the other peers store.
  const pad = 'x'.repeat(o['body-bytes'] - 8);
  const batch = o.rate > 0 ? Math.max(1, Math.min(o.batch, Math.round(o.rate / 20))) : o.batch;
  ready();
  const start = performance.now();
  let added = 0;
  while (added < o.n) {
    const k = Math.min(batch, o.n - added);
    const jobs = new Array(k);
    for (let i = 0; i < k; i++) {
      jobs[i] = {
        name: 'j',
        data: { b: pad },
        opts: { delay: randomDelay(o['min-delay-ms'], o['max-delay-ms']), removeOnComplete: true },
      };
    }
    await queue.addBulk(jobs);
    added += k;
    if (o.rate > 0) {
      const wait = start + (added / o.rate) * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }
  const secs = (performance.now() - start) / 1000;
  emit({ peer: 'bullmq', role: 'producer', added, secs, added_per_s: Math.round(added / secs) });
  await queue.close();
}

main().catch((e) => {
  process.stderr.write(`bullmq-producer: ${e.stack || e}\n`);
  process.exit(1);
});
