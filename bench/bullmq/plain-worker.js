// SPDX-License-Identifier: Apache-2.0
// Plain pattern, worker side: the Lua claim takes up to --concurrency due jobs under a lease,
// a no-op processor runs on each, and one pipeline acknowledges them (ZREM lease + DEL body per
// job). With nothing due it sleeps until the next due time, at most --poll-ms (jobs added
// meanwhile with an earlier due time wait for that poll). Prints the same record as
// bullmq-worker.js; lateness is processing start minus the due time in the body.
'use strict';
const Redis = require('ioredis');
const { define } = require('./plain-scripts');
const { parseArgs, redisSpec, dueOf, emitDelivered, ready, sleep, run } = require('./lib');

const o = parseArgs({
  ...redisSpec('plain'),
  n: [100000, 0, 1e8],
  concurrency: [50, 1, 10000],
  'poll-ms': [100, 1, 60000],
  'lease-ms': [60000, 1, 864e5],
  secs: [600, 0.1, 86400],
});

const noop = async () => {};

async function main() {
  const redis = new Redis({ host: o.host, port: o.port, lazyConnect: true });
  await redis.connect();
  const k = define(redis, o.queue);
  const lateness = [];
  let delivered = 0;
  ready();
  const start = performance.now();
  const stopAt = start + o.secs * 1000;
  while ((o.n === 0 || delivered < o.n) && performance.now() < stopAt) {
    const now = Date.now();
    const [ids, bodies] = await redis.plainClaim(k.delayed, k.leased, now, o.concurrency,
      o['lease-ms'], k.jobPrefix);
    if (!ids) {
      const next = bodies === null ? Infinity : Number(bodies) - Date.now();
      await sleep(Math.max(1, Math.min(o['poll-ms'], next, stopAt - performance.now())));
      continue;
    }
    await Promise.all(bodies.map((b) => {
      lateness.push(Date.now() - dueOf(b));
      return noop(b);
    }));
    const p = redis.pipeline();
    for (const id of ids) p.zrem(k.leased, id).del(k.job(id));
    for (const [err] of await p.exec()) if (err) throw err;
    delivered += ids.length;
  }
  emitDelivered('plain', { delivered, n: o.n, start, end: performance.now(), lateness });
  redis.disconnect();
}

run('plain-worker', main);
