// SPDX-License-Identifier: Apache-2.0
// Plain pattern, producer side: one EVALSHA per job (SET body + ZADD due), sent in pipelines of
// --batch awaited one after another; --rate paces them. Prints {added, secs, added_per_s}.
'use strict';
const Redis = require('ioredis');
const { define } = require('./plain-scripts');
const { parseArgs, makeBody, randomDelay, emit, ready, sleep } = require('./lib');

const o = parseArgs({
  host: ['127.0.0.1'],
  port: [6379, 1, 65535],
  queue: ['plain'],
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
  const redis = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  await redis.connect();
  const k = define(redis, o.queue);
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`; // ids unique per run
  const batch = o.rate > 0 ? Math.max(1, Math.min(o.batch, Math.round(o.rate / 20))) : o.batch;
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
    if (o.rate > 0) {
      const wait = start + (added / o.rate) * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }
  const secs = (performance.now() - start) / 1000;
  emit({ peer: 'plain', role: 'producer', added, secs, added_per_s: Math.round(added / secs) });
  redis.disconnect();
}

main().catch((e) => {
  process.stderr.write(`plain-producer: ${e.stack || e}\n`);
  process.exit(1);
});
