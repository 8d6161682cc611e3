// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the fleet benchmark drivers (scripts/compare-fleet.sh): option parsing with
// ranges, the job body, percentiles, and the one JSON line each driver prints.
'use strict';

// Parses --name value pairs against spec {name: [default, min, max]} (numbers) or
// {name: [default]} (strings). A bad or unknown option exits 2 naming it and its range.
function parseArgs(spec, argv = process.argv.slice(2)) {
  const out = {};
  for (const [k, v] of Object.entries(spec)) out[k] = v[0];
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '');
    const s = spec[name];
    if (!argv[i].startsWith('--') || !s || i + 1 >= argv.length) {
      usage(`unknown option or missing value: ${argv[i]}`, spec);
    }
    const raw = argv[i + 1];
    if (s.length === 1) {
      out[name] = raw;
      continue;
    }
    const n = Number(raw);
    if (!Number.isFinite(n) || n < s[1] || n > s[2]) {
      usage(`--${name} must be a number from ${s[1]} to ${s[2]}, not '${raw}'`, spec);
    }
    out[name] = n;
  }
  return out;
}

function usage(message, spec) {
  const opts = Object.entries(spec)
    .map(([k, v]) => `  --${k} ${v.length === 1 ? `TEXT (${v[0]})` : `${v[1]}..${v[2]} (${v[0]})`}`)
    .join('\n');
  process.stderr.write(`${message}\noptions:\n${opts}\n`);
  process.exit(2);
}

// A body of exactly `bytes` bytes that starts with the job's due time in epoch milliseconds, so
// a consumer measures lateness from the body alone: "<due_ms>:xxxx...".
function makeBody(dueMs, bytes) {
  const head = `${dueMs}:`;
  return head.length >= bytes ? head : head + 'x'.repeat(bytes - head.length);
}

function dueOf(body) {
  const s = typeof body === 'string' ? body : body.toString('latin1', 0, 20);
  return Number(s.slice(0, s.indexOf(':')));
}

// A delay drawn uniformly from [minMs, maxMs].
function randomDelay(minMs, maxMs) {
  return minMs + Math.floor(Math.random() * (maxMs - minMs + 1));
}

// Nearest-rank percentiles of a list of numbers (milliseconds): {p50, p99, max, n}.
function percentiles(values) {
  if (values.length === 0) return { p50: null, p99: null, max: null, n: 0 };
  const v = Float64Array.from(values).sort();
  const at = (p) => v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
  const r = (x) => Math.round(x * 10) / 10;
  return { p50: r(at(50)), p99: r(at(99)), max: r(v[v.length - 1]), n: v.length };
}

// Writes one JSON line to stdout, with the CPU seconds this process used; the orchestrator
// reads the last line a driver printed.
function emit(record) {
  const u = process.cpuUsage();
  record.cpu_secs = Math.round((u.user + u.system) / 1e3) / 1e3;
  process.stdout.write(JSON.stringify(record) + '\n');
}

// Tells the orchestrator the driver is connected and about to start its clock.
function ready() {
  process.stderr.write('READY\n');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

module.exports = { parseArgs, makeBody, dueOf, randomDelay, percentiles, emit, ready, sleep };
