// SPDX-License-Identifier: Apache-2.0
// wheel-jobs peer, producer side: puts --n delayed jobs over --connections connections spread
// over the --addrs nodes, each keeping up to --window puts in flight (delays in decimal seconds,
// wheel-jobs' millisecond extension). Prints {added, secs, added_per_s}.
'use strict';
const { BeanstalkConnection, parseAddrs } = require('./beanstalk');
const { parseArgs, makeBody, randomDelay, emit, ready, sleep } = require('./lib');

const o = parseArgs({
  addrs: ['127.0.0.1:11300'],
  tube: ['fleet'],
  n: [100000, 1, 1e8],
  'min-delay-ms': [1000, 0, 864e5],
  'max-delay-ms': [10000, 0, 864e5],
  'body-bytes': [100, 16, 1 << 20],
  connections: [12, 1, 10000],
  window: [100, 1, 100000],
  rate: [0, 0, 1e7],
  ttr: [60, 1, 86400],
});
if (o['max-delay-ms'] < o['min-delay-ms']) {
  process.stderr.write('--max-delay-ms must be at least --min-delay-ms\n');
  process.exit(2);
}

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
      if (o.rate > 0) {
        const wait = start + (issued / o.rate) * 1000 - performance.now();
        if (wait > 0) await sleep(wait);
      }
      const delay = randomDelay(o['min-delay-ms'], o['max-delay-ms']);
      for (let attempt = 0; ; attempt++) {
        const r = await c.put(makeBody(Date.now() + delay, o['body-bytes']),
          { delaySecs: (delay / 1000).toFixed(3), ttr: o.ttr });
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
  const secs = (performance.now() - start) / 1000;
  emit({ peer: 'wheel-jobs', role: 'producer', added, secs, added_per_s: Math.round(added / secs),
    errors });
  for (const c of conns) c.close();
}

main().catch((e) => {
  process.stderr.write(`beanstalk-producer: ${e.stack || e}\n`);
  process.exit(1);
});
