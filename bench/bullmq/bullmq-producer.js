// SPDX-License-Identifier: Apache-2.0
// BullMQ peer, producer side: adds --n delayed jobs with Queue.addBulk, as BullMQ's docs show
// (opts.delay in milliseconds; removeOnComplete so a processed job is deleted, as a beanstalk
// client deletes it). --rate 0 adds as fast as one awaited addBulk after another allows; a rate
// paces the batches against the start time. Prints {added, secs, added_per_s}.
'use strict';
const { Queue } = require('bullmq');
const { parseArgs, producerSpec, redisSpec, checkDelays, batchSize, pace, randomDelay, emitAdded,
  ready, run } = require('./lib');

const o = parseArgs({
  ...redisSpec('fleet'),
  ...producerSpec,
  batch: [1000, 1, 100000],
  rate: [0, 0, 1e7],
});
checkDelays(o);

async function main() {
  const queue = new Queue(o.queue, { connection: { host: o.host, port: o.port } });
  queue.on('error', (e) => process.stderr.write(`queue error: ${e.message}\n`));
  await queue.waitUntilReady();
  // The JSON of {b: "..."} is body-bytes long, the size the other peers store.
  const pad = 'x'.repeat(o['body-bytes'] - 8);
  const batch = batchSize(o);
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
    await pace(start, added, o.rate);
  }
  emitAdded('bullmq', added, start);
  await queue.close();
}

run('bullmq-producer', main);
