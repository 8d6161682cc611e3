// SPDX-License-Identifier: Apache-2.0
// wheel-jobs peer, worker side: --connections connections spread over the --addrs nodes, each
// with --window reserves in flight (concurrency = connections x window; keep window 1 as
// beanstalk clients do: a delete queued behind a blocked reserve waits for it); a no-op
// processor, then delete, written with the next reserve. Runs until --n jobs are deleted or
// --secs passed. Prints the same record as bullmq-worker.js; lateness is processing start minus
// the due time in the body.
'use strict';
const { BeanstalkConnection, parseAddrs } = require('./beanstalk');
const { parseArgs, dueOf, emitDelivered, ready, sleep, run } = require('./lib');

const o = parseArgs({
  addrs: ['127.0.0.1:11300'],
  tube: ['fleet'],
  n: [100000, 0, 1e8],
  connections: [50, 1, 10000],
  window: [1, 1, 10000],
  secs: [600, 0.1, 86400],
  'reserve-timeout': [0, 0, 86400],
});
// A plain `reserve` blocks until a job is ready, as beanstalkd clients wait; with a timeout the
// server answers TIMED_OUT every that many seconds and the worker asks again.
const reserveCmd = o['reserve-timeout'] > 0 ? `reserve-with-timeout ${o['reserve-timeout']}` : 'reserve';

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
  // INTERNAL_ERROR (wheel-jobs: Redis did not answer in time) is counted and retried after
  // 50 ms, as an application would; a delete retried after one may find the job gone (the first
  // delete was applied, its answer lost), which counts as deleted.
  const errors = {};
  const retryable = async (r) => {
    if (r.words[0] !== 'INTERNAL_ERROR') return false;
    errors[r.line] = (errors[r.line] || 0) + 1;
    await sleep(50);
    return true;
  };
  // Each connection: reserve; on RESERVED run the no-op, then write the delete and the next
  // reserve together (one write, no round trip between them) and count the job once its delete
  // is answered. A delete retried after INTERNAL_ERROR is answered after that reserve.
  const one = async (c) => {
    try {
      let r = await c.send(reserveCmd);
      while (!stopping) r = await deliverOne(c, r);
    } catch (e) {
      if (!stopping) throw e; // else closed while waiting: the run is over
    }
  };
  // Handles reserve reply `r`; returns the reply of the next reserve.
  const deliverOne = async (c, r) => {
    if (r.words[0] === 'TIMED_OUT' || r.words[0] === 'DEADLINE_SOON' || await retryable(r)) {
      return c.send(reserveCmd);
    }
    if (r.words[0] !== 'RESERVED') throw new Error(`reserve answered '${r.line}'`);
    lateness.push(Date.now() - dueOf(r.body));
    await noop(r.body);
    const id = r.words[1];
    let d = c.send(`delete ${id}`);
    const next = c.send(reserveCmd);
    next.catch(() => {}); // a failed delete ends the run first; the close rejects this one
    for (let attempt = 0; ; attempt++) {
      const reply = await d;
      if (reply.words[0] === 'DELETED' || (attempt > 0 && reply.words[0] === 'NOT_FOUND')) break;
      if (attempt >= 20 || !await retryable(reply)) {
        throw new Error(`delete ${id} answered '${reply.line}'`);
      }
      d = c.send(`delete ${id}`);
    }
    last = performance.now();
    if (++delivered === o.n) stop();
    return next;
  };
  // Stopping closes the connections: reserves still waiting end (their jobs, none, stay ready).
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const c of conns) c.close();
  };
  const timer = setTimeout(stop, o.secs * 1000);
  await Promise.all(conns.flatMap((c) => Array.from({ length: o.window }, () => one(c))));
  clearTimeout(timer);
  const end = o.n > 0 && delivered >= o.n ? last : performance.now();
  emitDelivered('wheel-jobs', { delivered, n: o.n, start, end, lateness }, { errors });
}

run('beanstalk-worker', main);
