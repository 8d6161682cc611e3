// SPDX-License-Identifier: Apache-2.0
// Markdown tables from run-peer.js JSON lines: medians over rounds of BullMQ, the plain pattern
// and wheel-jobs (1 node), wheel-jobs' ratio to BullMQ and whether each goal of issue 20 is met;
// then the fleet curve (1..K wheel-jobs nodes on one Redis) with the CPU each process used.
// usage: node table.js FILE.jsonl...
'use strict';
const fs = require('node:fs');

const recs = process.argv.slice(2).flatMap((f) => fs.readFileSync(f, 'utf8').split('\n')
  .filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)));

function median(xs) {
  const v = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Records of one peer (wheel-jobs: with `nodes` nodes) and metric.
const pick = (peer, metric, nodes) => recs.filter((r) => r.peer === peer && r.metric === metric &&
  (peer !== 'wheel-jobs' || r.nodes === nodes));
const med = (peer, metric, nodes = 1, field = 'value') =>
  median(pick(peer, metric, nodes).map((r) => r[field]));
const rounds = (peer, metric, nodes = 1) => pick(peer, metric, nodes).length;

function fmt(x) {
  if (x === null) return '—';
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en-US');
  if (Math.abs(x) >= 10) return x.toFixed(1).replace(/\.0$/, '');
  return x.toFixed(2).replace(/\.?0+$/, '') || '0';
}

const latAt = recs.find((r) => r.metric === 'lateness_p99_ms');
const rate = latAt ? `${latAt.lat_rate.toLocaleString('en-US')}/s` : '?';
// [label, metric, goal text, check(ours, bullmq) or null]
const ROWS = [
  ['delayed jobs added per second', 'added_per_s', '≥ 3× BullMQ', (w, b) => w >= 3 * b],
  ['jobs delivered (reserved + deleted) per second, all due', 'delivered_per_s', '≥ 3× BullMQ',
    (w, b) => w >= 3 * b],
  [`delivery lateness p50, ms (jobs added at ${rate})`, 'lateness_p50_ms', '', null],
  [`delivery lateness p99, ms (jobs added at ${rate})`, 'lateness_p99_ms', '≤ 10 ms',
    (w) => w <= 10],
  [`delivery lateness max, ms (jobs added at ${rate})`, 'lateness_max_ms', '', null],
  ['Redis commands per delivered job, end to end (the lateness run)', 'commands_per_job',
    '≤ 1/4 of BullMQ', (w, b) => w <= b / 4],
  ['Redis commands per job, add all then deliver all', 'burst_commands_per_job', '', null],
  ['Redis commands per second, 10^5 pending, nothing due', 'idle_commands_per_s',
    '≤ 1/10 of BullMQ', (w, b) => w <= b / 10],
];

const lines = [];
const n = Math.max(rounds('bullmq', 'added_per_s'), rounds('plain', 'added_per_s'),
  rounds('wheel-jobs', 'added_per_s'));
lines.push(`Medians of ${n} round(s) each.`, '');
lines.push('| metric | goal | BullMQ 6.7 | plain ZADD + Lua | wheel-jobs, 1 node | wheel-jobs ÷ BullMQ | goal |');
lines.push('|---|---|---|---|---|---|---|');
for (const [label, metric, goal, check] of ROWS) {
  const b = med('bullmq', metric);
  const p = med('plain', metric);
  const w = med('wheel-jobs', metric);
  const ratio = w !== null && b ? `${fmt(w / b)}×` : '—';
  let met = '';
  if (check && (w === null || b === null)) {
    met = w === null && rounds('wheel-jobs', 'added_per_s') ? 'failed (its .err file says why)' : 'not measured';
  } else if (check) {
    met = check(w, b) ? 'met' : 'not met';
  }
  lines.push(`| ${label} | ${goal || '—'} | ${fmt(b)} | ${fmt(p)} | ${fmt(w)} | ${ratio} | ${met} |`);
}

const fleet = [...new Set(recs.filter((r) => r.peer === 'wheel-jobs' && r.metric === 'delivered_per_s')
  .map((r) => r.nodes))].sort((a, b) => a - b);
if (fleet.length) {
  lines.push('', 'wheel-jobs nodes on one Redis (add then deliver 10^5 jobs; CPU as % of one core ' +
    'over the phase; the load clients are one Node process each):', '');
  lines.push('| nodes | added/s | delivered/s | Redis CPU, deliver | nodes CPU, deliver | client CPU, deliver |');
  lines.push('|---|---|---|---|---|---|');
  for (const k of fleet) {
    const d = pick('wheel-jobs', 'delivered_per_s', k);
    const nodeCpu = d.length ? d[0].node_cpu_pct.map((_, i) => fmt(median(d.map((r) => r.node_cpu_pct[i]))) + '%') : [];
    lines.push(`| ${k} | ${fmt(med('wheel-jobs', 'added_per_s', k))} | ` +
      `${fmt(med('wheel-jobs', 'delivered_per_s', k))} | ` +
      `${fmt(med('wheel-jobs', 'delivered_per_s', k, 'redis_cpu_pct'))}% | ${nodeCpu.join(' + ')} | ` +
      `${fmt(med('wheel-jobs', 'delivered_per_s', k, 'client_cpu_pct'))}% |`);
  }
}

// Error replies the drivers counted and retried (wheel-jobs' INTERNAL_ERROR when Redis did not
// answer in time), and rounds that failed (no record of a metric).
const errs = recs.filter((r) => r.errors && Object.keys(r.errors).length);
if (errs.length) {
  lines.push('', 'Error replies, counted and retried after 50 ms by the drivers:');
  for (const r of errs) {
    const what = Object.entries(r.errors).map(([k, v]) => `${v}× ${k}`).join(', ');
    lines.push(`- ${r.peer}${r.nodes ? ` (${r.nodes} node${r.nodes > 1 ? 's' : ''})` : ''}, ` +
      `round ${r.round}, ${r.metric}: ${what}`);
  }
}

// Where each peer's Redis time goes while it delivers: CPU of Redis and of the consumer.
lines.push('', 'CPU while delivering (median % of one core): Redis / consumer process');
for (const peer of ['bullmq', 'plain', 'wheel-jobs']) {
  const r = med(peer, 'delivered_per_s', 1, 'redis_cpu_pct');
  if (r === null) continue;
  lines.push(`- ${peer}: Redis ${fmt(r)}%, worker ${fmt(med(peer, 'delivered_per_s', 1, 'client_cpu_pct'))}%`);
}
process.stdout.write(lines.join('\n') + '\n');
