// SPDX-License-Identifier: Apache-2.0
// Plain pattern, producer side: one EVALSHA per job (SET body + ZADD due), sent in pipelines of
// --batch awaited one after another; --rate paces them. Prints {added, secs, added_per_s}.
'use strict';
const Redis = require('ioredis');
const { define } = require('./plain-scripts');
const { parseArgs, producerSpec, redisSpec, checkDelays, batchSize, pace, makeBody, randomDelay,
  emitAdded, ready, run } = require('./lib');

const o = parseArgs({
  ...redisSpec('plain'),
  ...producerSpec,
  batch: [1000, 1, 100000],
  rate: [0, 0, 1e7],
});
checkDelays(o);

async function main() {
  const redis = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  await redis.connect();
  const k = define(redis, o.queue);
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`; // ids unique per run
  const batch = batchSize(o);
  ready();
  const start = performance.now();
  let added = 0;
  while (added < o.n) {
    const m = Math.min(batch, o.n - added);
    const p = redis.pipeline();
    const now = Date.now();
    for (let i = 0; i < m; i++) {
      const id = `${tag}-${added + i}`;
      const due = now + randomDelay(o['min-delay-ms'], o['max-delay-ms']);
      p.plainAdd(k.delayed, k.job(id), id, due, makeBody(due, o['body-bytes']));
    }
    for (const [err] of await p.exec()) if (err) throw err;
    added += m;
    await pace(start, added, o.rate);
  }
  emitAdded('plain', added, start);
  redis.disconnect();
}

run('plain-producer', main);
