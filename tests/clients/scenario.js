// SPDX-License-Identifier: Apache-2.0
// One scenario of an unmodified npm beanstalkd client (node-beanstalk) against a server on
// 127.0.0.1:PORT: put with delay and priority, use/watch/ignore, reserve (plain, with timeout,
// by id), delete, release with delay, bury/kick/kick-job, touch, peek*, stats-job/-tube/stats
// (YAML parsed by the client), list-tubes*, pause-tube, a binary body, the NOT_FOUND cases.
// The same scenario must pass against Debian's beanstalkd (the reference) and wheel-jobs.
// Usage: node scenario.js PORT [--extensions]   (--extensions: wheel-jobs' decimal delays too)
// Prints one "ok - step" line per step; exits 0 when all pass, 1 on the first failure.
'use strict';

const net = require('net');
const { Client } = require('node-beanstalk');

const port = Number(process.argv[2]);
const extensions = process.argv.includes('--extensions');
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error('usage: node scenario.js PORT [--extensions]');
  process.exit(2);
}

// The whole scenario must end in time, whatever the server does.
const deadline = setTimeout(() => {
  console.error('not ok - the scenario did not finish within 90 s');
  process.exit(1);
}, 90_000);

// Raw bytes both ways: a job body is what was put, byte for byte.
const rawSerializer = {
  serialize: (payload) => (Buffer.isBuffer(payload) ? payload : Buffer.from(String(payload))),
  deserialize: (buffer) => buffer,
};

function client() {
  return new Client({ host: '127.0.0.1', port, serializer: rawSerializer, dataReadTimeoutMs: 10_000 });
}

function check(ok, what, detail) {
  if (!ok) throw new Error(`${what}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
}

function equal(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, what, { actual, expected });
}

let steps = 0;
async function step(name, body) {
  await body();
  steps += 1;
  console.log(`ok - ${name}`);
}

// The keys of beanstalkd 1.12's YAML documents, in its order.
const STATS_KEYS = [
  'current-jobs-urgent', 'current-jobs-ready', 'current-jobs-reserved', 'current-jobs-delayed',
  'current-jobs-buried', 'cmd-put', 'cmd-peek', 'cmd-peek-ready', 'cmd-peek-delayed',
  'cmd-peek-buried', 'cmd-reserve', 'cmd-reserve-with-timeout', 'cmd-delete', 'cmd-release',
  'cmd-use', 'cmd-watch', 'cmd-ignore', 'cmd-bury', 'cmd-kick', 'cmd-touch', 'cmd-stats',
  'cmd-stats-job', 'cmd-stats-tube', 'cmd-list-tubes', 'cmd-list-tube-used',
  'cmd-list-tubes-watched', 'cmd-pause-tube', 'job-timeouts', 'total-jobs', 'max-job-size',
  'current-tubes', 'current-connections', 'current-producers', 'current-workers',
  'current-waiting', 'total-connections', 'pid', 'version', 'rusage-utime', 'rusage-stime',
  'uptime', 'binlog-oldest-index', 'binlog-current-index', 'binlog-records-migrated',
  'binlog-records-written', 'binlog-max-size', 'draining', 'id', 'hostname', 'os', 'platform'];
const TUBE_KEYS = [
  'name', 'current-jobs-urgent', 'current-jobs-ready', 'current-jobs-reserved',
  'current-jobs-delayed', 'current-jobs-buried', 'total-jobs', 'current-using',
  'current-watching', 'current-waiting', 'cmd-delete', 'cmd-pause-tube', 'pause',
  'pause-time-left'];
const JOB_KEYS = [
  'id', 'tube', 'state', 'pri', 'age', 'delay', 'ttr', 'time-left', 'file', 'reserves',
  'timeouts', 'releases', 'buries', 'kicks'];

const TUBE = 'wt-scenario';

// One request and its reply line on a raw socket (for what the client library cannot send).
function rawExchange(request, timeoutMs) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no reply to ${JSON.stringify(request)}`)); }, timeoutMs);
    socket.on('error', (e) => { clearTimeout(timer); reject(e); });
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      const lines = data.split('\r\n');
      if (lines.length >= request.replies + 1) {
        clearTimeout(timer);
        // Resolve once the server closed its side: by then it has ended the session (a job
        // this connection reserved is ready again for the next step).
        socket.removeAllListeners('data');
        socket.on('close', () => resolve(lines.slice(0, request.replies)));
        socket.end();
      }
    });
    socket.write(request.bytes);
  });
}

async function main() {
  const producer = client();
  const worker = client();
  await producer.connect();
  await worker.connect();
  const ids = {};

  await step('a new connection uses and watches "default"', async () => {
    equal(await producer.listTubeUsed(), 'default', 'list-tube-used');
    equal(await worker.listTubesWatched(), ['default'], 'list-tubes-watched');
  });

  await step('use a tube and put with priorities and a delay', async () => {
    equal(await producer.use(TUBE), TUBE, 'use');
    const low = await producer.put('low', 60, 100);
    const high = await producer.put('high', 60, 5);
    const later = await producer.put('later', 60, 10, 1);
    equal([low.state, high.state, later.state], ['ready', 'ready', 'delayed'], 'put states');
    check(low.id < high.id && high.id < later.id, 'ids grow', [low.id, high.id, later.id]);
    ids.low = low.id; ids.high = high.id; ids.later = later.id;
    ids.laterPutAt = Date.now();
  });

  await step('watch and ignore', async () => {
    equal(await worker.watch(TUBE), 2, 'watch');
    equal(await worker.ignore('default'), true, 'ignore default');
    equal(await worker.listTubesWatched(), [TUBE], 'list-tubes-watched');
    equal(await worker.ignore(TUBE), false, 'ignoring the last tube is NOT_IGNORED');
  });

  await step('peek, peek-ready (priority first), peek-delayed, peek-buried', async () => {
    const ready = await producer.peekReady();
    equal([ready.id, ready.payload.toString()], [ids.high, 'high'], 'peek-ready');
    const delayed = await producer.peekDelayed();
    equal(delayed.id, ids.later, 'peek-delayed');
    equal(await producer.peekBuried(), null, 'peek-buried with none');
    const byId = await producer.peek(ids.low);
    equal(byId.payload.toString(), 'low', 'peek by id');
    equal(await producer.peek(999999999), null, 'peek of a missing job');
  });

  await step('stats-job, stats-tube and stats parse as beanstalkd YAML', async () => {
    const job = await producer.statsJob(ids.later);
    equal(Object.keys(job), JOB_KEYS, 'stats-job keys');
    equal([job.id, job.tube, job.state, job.pri, job.delay, job.ttr, job.reserves],
      [ids.later, TUBE, 'delayed', 10, 1, 60, 0], 'stats-job values');
    check(job['time-left'] >= 0 && job['time-left'] <= 1, 'time-left of a 1 s delay', job['time-left']);
    const tube = await producer.statsTube(TUBE);
    equal(Object.keys(tube), TUBE_KEYS, 'stats-tube keys');
    equal([tube.name, tube['current-jobs-ready'], tube['current-jobs-delayed'],
      tube['current-jobs-urgent'], tube['total-jobs'], tube['current-using'],
      tube['current-watching'], tube.pause],
    [TUBE, 2, 1, 2, 3, 1, 1, 0], 'stats-tube values');
    const stats = await producer.stats();
    equal(Object.keys(stats), STATS_KEYS, 'stats keys');
    equal([stats['current-jobs-ready'], stats['current-jobs-delayed'], stats['cmd-put'],
      stats['current-tubes'], stats['current-connections'], stats['max-job-size'],
      stats.draining], [2, 1, 3, 2, 2, 65535, false], 'stats values');
    check(typeof stats.version === 'string' && stats.version.length > 0, 'version', stats.version);
    equal(await producer.statsJob(999999999), null, 'stats-job of a missing job');
    equal(await producer.statsTube('no-such-tube'), null, 'stats-tube of a missing tube');
  });

  await step('list-tubes', async () => {
    const tubes = await producer.listTubes();
    check(tubes.includes('default') && tubes.includes(TUBE), 'list-tubes', tubes);
  });

  await step('reserve-with-timeout 0, touch, release with a delay', async () => {
    const job = await worker.reserveWithTimeout(0);
    equal([job.id, job.payload.toString()], [ids.high, 'high'], 'the most urgent job first');
    equal((await worker.statsJob(ids.high)).state, 'reserved', 'reserved');
    equal(await worker.touch(ids.high), true, 'touch');
    equal(await producer.touch(ids.high), false, 'touch by another connection is NOT_FOUND');
    equal(await worker.release(ids.high, 7, 1), 'delayed', 'release with delay');
    ids.highReleasedAt = Date.now();
    const stats = await worker.statsJob(ids.high);
    equal([stats.state, stats.pri, stats.delay, stats.reserves, stats.releases],
      ['delayed', 7, 1, 1, 1], 'stats-job after release');
  });

  await step('reserve, bury, peek-buried, kick', async () => {
    const job = await worker.reserve();
    equal(job.id, ids.low, 'reserve');
    equal(await worker.bury(ids.low, 20), true, 'bury');
    equal((await producer.peekBuried()).id, ids.low, 'peek-buried');
    const buried = await producer.statsJob(ids.low);
    equal([buried.state, buried.pri, buried.buries], ['buried', 20, 1], 'stats-job buried');
    equal(await producer.kick(10), 1, 'kick moves the buried job only');
    const kicked = await producer.statsJob(ids.low);
    equal([kicked.state, kicked.kicks], ['ready', 1], 'stats-job kicked');
  });

  await step('reserve-job, delete, delete again', async () => {
    const job = await worker.reserveJob(ids.low);
    equal([job.id, job.payload.toString()], [ids.low, 'low'], 'reserve-job');
    equal(await worker.delete(ids.low), true, 'delete');
    equal(await worker.delete(ids.low), false, 'a second delete is NOT_FOUND');
    equal(await worker.release(ids.low, 1, 0), null, 'release of a deleted job is NOT_FOUND');
    equal(await worker.bury(ids.low, 1), false, 'bury of a deleted job is NOT_FOUND');
  });

  await step('delayed jobs become ready when their delay has passed', async () => {
    const got = [];
    for (let i = 0; i < 2; i += 1) {
      const job = await worker.reserveWithTimeout(10);
      check(job !== null, 'a delayed job within 10 s');
      got.push(job.id);
      const since = Date.now() - (job.id === ids.later ? ids.laterPutAt : ids.highReleasedAt);
      check(since >= 900, 'not before its delay', { id: job.id, ms: since });
    }
    equal(got.sort((a, b) => a - b), [ids.high, ids.later].sort((a, b) => a - b), 'both delayed jobs');
    for (const id of got) equal(await worker.delete(id), true, `delete ${id}`);
  });

  await step('kick-job of a delayed job', async () => {
    const job = await producer.put('far', 60, 1, 3600);
    equal(job.state, 'delayed', 'put with a long delay');
    equal(await producer.kickJob(job.id), true, 'kick-job');
    equal((await producer.statsJob(job.id)).state, 'ready', 'kicked to ready');
    equal(await producer.kickJob(job.id), false, 'kick-job of a ready job is NOT_FOUND');
    equal(await producer.delete(job.id), true, 'delete a ready job');
  });

  await step('pause-tube holds reservations back for its delay', async () => {
    equal(await producer.pauseTube(TUBE, 1), true, 'pause-tube');
    const pausedAt = Date.now();
    const job = await producer.put('paused', 60, 1);
    equal(await worker.reserveWithTimeout(0), null, 'TIMED_OUT while paused');
    const tube = await producer.statsTube(TUBE);
    equal([tube.pause, tube['cmd-pause-tube']], [1, 1], 'stats-tube of a paused tube');
    check(tube['pause-time-left'] >= 0 && tube['pause-time-left'] <= 1, 'pause-time-left', tube['pause-time-left']);
    const got = await worker.reserveWithTimeout(10);
    check(got !== null && got.id === job.id, 'reserved after the pause', got && got.id);
    check(Date.now() - pausedAt >= 900, 'not before the pause ended', Date.now() - pausedAt);
    equal(await worker.delete(job.id), true, 'delete');
    equal(await producer.pauseTube('no-such-tube', 1), false, 'pause-tube of a missing tube');
  });

  await step('a binary body comes back byte for byte', async () => {
    const body = Buffer.from([0, 1, 13, 10, 255, 13, 10, 0x72, 0x0d]);
    const put = await producer.put(body, 60, 0);
    const job = await worker.reserveWithTimeout(5);
    check(job !== null && job.id === put.id, 'reserve the binary job');
    check(Buffer.compare(job.payload, body) === 0, 'same bytes', [...job.payload]);
    equal(await worker.delete(put.id), true, 'delete');
  });

  await step('the tube is empty again', async () => {
    const tube = await producer.statsTube(TUBE);
    equal([tube['current-jobs-ready'], tube['current-jobs-reserved'], tube['current-jobs-delayed'],
      tube['current-jobs-buried'], tube['total-jobs'], tube['cmd-delete']],
    [0, 0, 0, 0, 6, 6], 'stats-tube at the end');
    equal(await worker.reserveWithTimeout(0), null, 'nothing left to reserve');
  });

  if (extensions) {
    await step('wheel-jobs: decimal delays (put 0 0.250 60 N)', async () => {
      const started = Date.now();
      const lines = await rawExchange({
        bytes: `use ${TUBE}\r\nwatch ${TUBE}\r\nput 0 0.250 60 5\r\nquick\r\nreserve-with-timeout 5\r\n`,
        replies: 4,
      }, 10_000);
      check(/^INSERTED \d+$/.test(lines[2]), 'INSERTED', lines);
      check(/^RESERVED \d+ 5$/.test(lines[3]), 'RESERVED after the delay', lines);
      const ms = Date.now() - started;
      check(ms >= 200 && ms < 5000, 'reserved about 250 ms later', ms);
      const id = Number(lines[2].split(' ')[1]);
      equal(await producer.delete(id), true, 'delete');
    });
  }

  await producer.disconnect();
  await worker.disconnect();
  console.log(`all ${steps} steps passed`);
}

main().then(() => {
  clearTimeout(deadline);
  process.exit(0);
}, (error) => {
  console.error(`not ok - ${error.message}`);
  process.exit(1);
});
