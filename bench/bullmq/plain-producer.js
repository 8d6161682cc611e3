// SPDX-License-Identifier: Apache-2.0
// Plain pattern, producer side: one EVALSHA per job (SET body + ZADD due), sent in pipelines of
// --batch awaited one after another; --rate paces them. Prints {added, secs, added_per_s}.
'use strict';
const Redis = require('ioredis');
const { define } = require('./plain-scripts');
const { parseArgs, redisProducerSpec, checkDelays, makeBody, randomDelay, addInBatches, emitAdded,
  run } = require('./lib');

const o = parseArgs(redisProducerSpec('plain'));
checkDelays(o);

async function main() {
  const redis = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  await redis.connect();
  const k = define(redis, o.queue);
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`; // ids unique per run
  const { added, start } = await addInBatches(o, async (first, count) => {
    const p = redis.pipeline();
    const now = Date.now();
    for (let i = 0; i < count; i++) {
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
