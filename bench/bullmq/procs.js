// SPDX-License-Identifier: Apache-2.0
// Child processes for the fleet benchmark: a redis-server on a free port in its own directory,
// wheel-jobs nodes, driver scripts that say READY and end with one JSON line, CPU time from
// /proc, and INFO commandstats snapshots. Every wait is bounded.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const Redis = require('ioredis');
const { sleep } = require('./lib');

const TICK = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s on Linux

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// CPU seconds (user + system) a process has used so far; 0 once it is gone.
function cpuSecs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICK; // utime, stime (fields 14, 15)
  } catch {
    return 0;
  }
}

// Stops a child: SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited.
async function stop(child, graceMs = 10000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

// A redis-server with AOF everysec (no RDB snapshots) in a new directory under `root`.
async function startRedis(root, extraArgs = []) {
  const dir = fs.mkdtempSync(path.join(root, 'redis-'));
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1',
      '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '',
      '--logfile', path.join(dir, 'redis.log'), ...extraArgs], { stdio: 'ignore' });
    const client = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0,
      retryStrategy: () => null });
    client.on('error', () => {}); // a refused connect is retried below; the stop closes it
    for (let i = 0; i < 100 && child.exitCode === null; i++) {
      try {
        await client.connect();
        await client.ping();
        return { child, port, dir, client };
      } catch {
        client.disconnect();
        await sleep(100);
      }
    }
    await stop(child);
  }
  throw new Error(`redis-server did not start (see ${dir}/redis.log)`);
}

async function stopRedis(r) {
  r.client.disconnect();
  await stop(r.child);
  fs.rmSync(r.dir, { recursive: true, force: true });
}

// {command: calls} from INFO commandstats. Redis counts a command a script runs through
// redis.call under its own name as well as the EVALSHA that ran the script.
async function commandStats(client) {
  const text = await client.info('commandstats');
  const out = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

// Calls between two snapshots: {total, by: {command: calls}}, without the INFO that took the
// first snapshot (the second one is not counted in itself).
function commandDelta(before, after) {
  const by = {};
  let total = 0;
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] || 0) - (k === 'info' ? 1 : 0);
    if (d > 0) {
      by[k] = d;
      total += d;
    }
  }
  return { total, by };
}

// Starts `node script args`; resolves {child, done} once it printed READY on stderr, where
// `done` resolves to its last JSON line after it exits 0 (rejects otherwise, or after
// `timeoutMs`).
function startDriver(script, args, timeoutMs) {
  // a driver here (name.js) runs on this Node; a program (a path) runs itself
  const js = script.endsWith('.js');
  const child = spawn(js ? process.execPath : script, js ? [path.join(__dirname, script), ...args]
    : args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  let onReady;
  const readyP = new Promise((resolve, reject) => {
    onReady = resolve;
    child.once('exit', () => reject(new Error(`${script} exited before READY: ${err}`)));
  });
  child.stderr.on('data', (d) => {
    err += d;
    if (err.includes('READY\n')) onReady();
  });
  const done = new Promise((resolve, reject) => {
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(t);
      const lines = out.trim().split('\n').filter((l) => l.startsWith('{'));
      if (code === 0 && lines.length) resolve(JSON.parse(lines[lines.length - 1]));
      else reject(new Error(`${script} ${args.join(' ')}: exit ${code ?? signal}: ${err.slice(-2000)}`));
    });
  });
  done.catch(() => {});
  return readyP.then(() => ({ child, done }));
}

// Starts a wheel-jobs node on a free port; resolves {child, port} once it is listening.
function startNode(binary, args, timeoutMs = 20000) {
  const child = spawn(binary, ['--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`wheel-jobs did not listen within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on \S*:(\d+)/);
      if (m) {
        clearTimeout(t);
        resolve({ child, port: Number(m[1]) });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`wheel-jobs exited ${code}: ${err}`));
    });
  });
}

module.exports = { freePort, cpuSecs, stop, startRedis, stopRedis, commandStats, commandDelta,
  startDriver, startNode };
