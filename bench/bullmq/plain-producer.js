// SPDX-License-Identifier: Apache-2.0
// Plain pattern, producer side: one EVALSHA per job (SET body + ZADD due), sent in pipelines of
// --batch awaited one after another; --rate paces them. Prints {added, secs, added_per_s}.
'use strict';
const Redis = require('ioredis');
const { define } = require('./plain-scripts');
const { parseArgs, producerSpec, redisSpec, batchSpec, checkDelays, addInBatches, makeBody,
  randomDelay, emitAdded, run } = require('./lib');

const o = parseArgs({ ...redisSpec('plain'), ...producerSpec, ...batchSpec });
checkDelays(o);

async function main() {
  const redis = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  await redis.connect();
  const k = define(redis, o.queue);
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`; // ids unique per run
  const { added, start } = await addInBatches(o, async (first, m) => {
    const p = redis.pipeline();
    const now = Date.now();
    for (let i = 0; i < m; i++) {
      const id = `${tag}-${first + i}`;
      const due = now + randomDelay(o['min-delay-ms'], o['max-delay-ms']);
      p.plainAdd(k.delayed, k.job(id), id, due, makeBody(due, o['body-bytes']));
    }
    for (const [err] of await p.exec()) if (err) throw err;
  });
  emitAdded('plain', added, start);
  redis.disconnect();
}

run('plain-producer', main);
