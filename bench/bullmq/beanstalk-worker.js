// SPDX-License-Identifier: Apache-2.0
// wheel-jobs peer, worker side: --connections connections spread over the --addrs nodes, each
// with --window reserves in flight (concurrency = connections x window; keep window 1 as
// beanstalk clients do: a delete queued behind a blocked reserve waits for its timeout); a
// no-op processor, then delete. Runs until --n jobs are deleted or --secs passed. Prints the same record as
// bullmq-worker.js; lateness is processing start minus the due time in the body.
'use strict';
const { BeanstalkConnection, parseAddrs } = require('./beanstalk');
const { parseArgs, dueOf, percentiles, emit, ready } = require('./lib');

const o = parseArgs({
  addrs: ['127.0.0.1:11300'],
  tube: ['fleet'],
  n: [100000, 0, 1e8],
  connections: [50, 1, 10000],
  window: [1, 1, 10000],
  secs: [600, 0.1, 86400],
});

const noop = async () => {};

async function main() {
  const addrs = parseAddrs(o.addrs);
  const conns = await Promise.all(Array.from({ length: o.connections }, (_, i) =>
    BeanstalkConnection.open(addrs[i % addrs.length].host, addrs[i % addrs.length].port)));
  await Promise.all(conns.map((c) => Promise.all([c.send(`watch ${o.tube}`), c.send('ignore default')])));
  const lateness = [];
  let delivered = 0;
  let stopping = false;
  let last = 0;
  ready();
  const start = performance.now();
  const one = async (c) => {
    while (!stopping) {
      const r = await c.send('reserve-with-timeout 1');
      if (r.words[0] === 'TIMED_OUT' || r.words[0] === 'DEADLINE_SOON') continue;
      if (r.words[0] !== 'RESERVED') throw new Error(`reserve answered '${r.line}'`);
      lateness.push(Date.now() - dueOf(r.body));
      await noop(r.body);
      const d = await c.send(`delete ${r.words[1]}`);
      if (d.words[0] !== 'DELETED') throw new Error(`delete ${r.words[1]} answered '${d.line}'`);
      last = performance.now();
      if (++delivered === o.n) stopping = true;
    }
  };
  const timer = setTimeout(() => (stopping = true), o.secs * 1000);
  const loops = Promise.all(conns.flatMap((c) => Array.from({ length: o.window }, () => one(c))));
  // Once stopping, loops still blocked in a reserve finish within its 1 s timeout.
  await loops;
  clearTimeout(timer);
  const end = o.n > 0 && delivered >= o.n ? last : performance.now();
  const secs = (end - start) / 1000;
  emit({
    peer: 'wheel-jobs',
    role: 'worker',
    delivered,
    complete: delivered >= o.n,
    secs,
    delivered_per_s: Math.round(delivered / secs),
    lateness_ms: percentiles(lateness),
  });
  for (const c of conns) c.close();
}

main().catch((e) => {
  process.stderr.write(`beanstalk-worker: ${e.stack || e}\n`);
  process.exit(1);
});
