// SPDX-License-Identifier: Apache-2.0
// BullMQ peer, producer side: adds --n delayed jobs with Queue.addBulk, as BullMQ's docs show
// (opts.delay in milliseconds; removeOnComplete so a processed job is deleted, as a beanstalk
// client deletes it). --rate 0 adds as fast as one awaited addBulk after another allows; a rate
// paces the batches against the start time. Prints {added, secs, added_per_s}.
'use strict';
const { Queue } = require('bullmq');
const { parseArgs, producerSpec, redisSpec, batchSpec, checkDelays, addInBatches, randomDelay,
  emitAdded, run } = require('./lib');

const o = parseArgs({ ...redisSpec('fleet'), ...producerSpec, ...batchSpec });
checkDelays(o);

async function main() {
  const queue = new Queue(o.queue, { connection: { host: o.host, port: o.port } });
  queue.on('error', (e) => process.stderr.write(`queue error: ${e.message}\n`));
  await queue.waitUntilReady();
  // The JSON of {b: "..."} is body-bytes long, the size the other peers store.
  const pad = 'x'.repeat(o['body-bytes'] - 8);
  const { added, start } = await addInBatches(o, async (first, k) => {
    const jobs = new Array(k);
    for (let i = 0; i < k; i++) {
      jobs[i] = {
        name: 'j',
        data: { b: pad },
        opts: { delay: randomDelay(o['min-delay-ms'], o['max-delay-ms']), removeOnComplete: true },
      };
    }
    await queue.addBulk(jobs);
  });
  emitAdded('bullmq', added, start);
  await queue.close();
}

run('bullmq-producer', main);
