// SPDX-License-Identifier: Apache-2.0
// wheel-jobs peer, producer side: puts --n delayed jobs over --connections connections spread
// over the --addrs nodes, each keeping up to --window puts in flight (delays in decimal seconds,
// wheel-jobs' millisecond extension; whole seconds as plain beanstalkd takes them). Prints
// {added, secs, added_per_s}.
'use strict';
const { BeanstalkConnection, parseAddrs } = require('./beanstalk');
const { parseArgs, producerSpec, checkDelays, pace, makeBody, randomDelay, emitAdded, ready, sleep,
  run } = require('./lib');

const o = parseArgs({
  addrs: ['127.0.0.1:11300'],
  tube: ['fleet'],
  ...producerSpec,
  connections: [12, 1, 10000],
  window: [100, 1, 100000],
  rate: [0, 0, 1e7],
  ttr: [60, 1, 86400],
});
checkDelays(o);

async function main() {
  const addrs = parseAddrs(o.addrs);
  const conns = await Promise.all(Array.from({ length: o.connections }, (_, i) =>
    BeanstalkConnection.open(addrs[i % addrs.length].host, addrs[i % addrs.length].port)));
  await Promise.all(conns.map((c) => c.send(`use ${o.tube}`)));
  ready();
  const start = performance.now();
  let issued = 0;
  let added = 0;
  const errors = {};
  const one = async (c) => {
    while (issued < o.n) {
      issued++;
      if (o.rate > 0) await pace(start, issued, o.rate);
      const delay = randomDelay(o['min-delay-ms'], o['max-delay-ms']);
      for (let attempt = 0; ; attempt++) {
        const r = await c.put(makeBody(Date.now() + delay, o['body-bytes']),
          { delaySecs: delay % 1000 ? (delay / 1000).toFixed(3) : delay / 1000, ttr: o.ttr });
        if (r.words[0] === 'INSERTED') break;
        // INTERNAL_ERROR (wheel-jobs: Redis did not answer in time): counted, retried after 50 ms
        if (r.words[0] !== 'INTERNAL_ERROR' || attempt >= 20) throw new Error(`put answered '${r.line}'`);
        errors[r.line] = (errors[r.line] || 0) + 1;
        await sleep(50);
      }
      added++;
    }
  };
  await Promise.all(conns.flatMap((c) => Array.from({ length: o.window }, () => one(c))));
  emitAdded('wheel-jobs', added, start, { errors });
  for (const c of conns) c.close();
}

run('beanstalk-producer', main);
