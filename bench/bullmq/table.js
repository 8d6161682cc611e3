// SPDX-License-Identifier: Apache-2.0
// Markdown tables from run-peer.js JSON lines: medians over rounds of BullMQ, the plain pattern
// and wheel-jobs (1 node), wheel-jobs' ratio to BullMQ and whether each goal of issue 20 is met;
// then the fleet curve (1..K wheel-jobs nodes on one Redis) with the CPU each process used, and
// which part saturated first in each phase of each peer.
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
// The parts that saturated first over the rounds of a phase: "redis", "redis ×2, cores", ...
function saturates(peer, metric, nodes = 1) {
  const count = {};
  for (const r of pick(peer, metric, nodes)) {
    if (r.saturates) count[r.saturates] = (count[r.saturates] || 0) + 1;
  }
  const parts = Object.entries(count).sort((a, b) => b[1] - a[1]);
  return parts.length ? parts.map(([k, v]) => (v > 1 ? `${k} ×${v}` : k)).join(', ') : '—';
}

function fmt(x) {
  if (x === null) return '—';
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString('en-US');
  if (Math.abs(x) >= 10) return x.toFixed(1).replace(/\.0$/, '');
  return x.toFixed(2).replace(/\.?0+$/, '') || '0';
}

const pct = (x) => (x === null ? '—' : `${fmt(x)}%`);

const latAt = recs.find((r) => r.metric === 'lateness_p99_ms');
const rate = latAt ? `${latAt.lat_rate.toLocaleString('en-US')}/s` : '?';
const latN = latAt ? latAt.lat_n.toLocaleString('en-US') : '?';
const e2eAt = recs.find((r) => r.metric === 'e2e_delivered_per_s');
const e2eN = e2eAt ? e2eAt.n.toLocaleString('en-US') : '?';
const e2e = `end to end (${e2eN} jobs added while the workers run)`;
// [label, metric, goal text, check(ours, bullmq) or null]
const ROWS = [
  ['delayed jobs added per second', 'added_per_s', '≥ 3× BullMQ', (w, b) => w >= 3 * b],
  ['jobs delivered (reserved + deleted) per second, all due', 'delivered_per_s', '≥ 3× BullMQ',
    (w, b) => w >= 3 * b],
  // ours through wheel::jobs in the worker's own process, against BullMQ's Worker (also in its
  // process): the fifth field names BullMQ's metric when it differs
  ['jobs delivered per second, all due, wheel::jobs in the worker\'s process (no node)',
    'lib_delivered_per_s', '≥ 3× BullMQ', (w, b) => w >= 3 * b, 'delivered_per_s'],
  [`delivery lateness p50, ms (${latN} jobs added at ${rate})`, 'lateness_p50_ms', '', null],
  [`delivery lateness p99, ms (${latN} jobs added at ${rate})`, 'lateness_p99_ms', '≤ 10 ms',
    (w) => w <= 10],
  [`delivery lateness max, ms (${latN} jobs added at ${rate})`, 'lateness_max_ms', '', null],
  [`Redis commands per delivered job, ${e2e}`, 'e2e_commands_per_job', '≤ 1/4 of BullMQ',
    (w, b) => w <= b / 4],
  [`jobs delivered per second, ${e2e}`, 'e2e_delivered_per_s', '', null],
  [`delivery lateness p50, ms, ${e2e}`, 'e2e_lateness_p50_ms', '', null],
  [`delivery lateness p99, ms, ${e2e}`, 'e2e_lateness_p99_ms', '', null],
  [`delivery lateness max, ms, ${e2e}`, 'e2e_lateness_max_ms', '', null],
  [`Redis commands per delivered job, ${latN} jobs added at ${rate}`, 'commands_per_job', '', null],
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
for (const [label, metric, goal, check, peerMetric] of ROWS) {
  const b = med('bullmq', peerMetric || metric);
  const p = peerMetric ? null : med('plain', metric);
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
  lines.push('', 'wheel-jobs nodes on one Redis (add then deliver 10^5 jobs, then end to end; CPU ' +
    'as % of one core over the deliver phase; the load clients are one Node process each):', '');
  lines.push('| nodes | added/s | delivered/s | Redis CPU, deliver | nodes CPU, deliver | ' +
    'client CPU, deliver | saturates, deliver | end to end: delivered/s | lateness p99, ms | ' +
    'commands/job | saturates |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const k of fleet) {
    const d = pick('wheel-jobs', 'delivered_per_s', k);
    const nodeCpu = d.length ? d[0].node_cpu_pct.map((_, i) => fmt(median(d.map((r) => r.node_cpu_pct[i]))) + '%') : [];
    lines.push(`| ${k} | ${fmt(med('wheel-jobs', 'added_per_s', k))} | ` +
      `${fmt(med('wheel-jobs', 'delivered_per_s', k))} | ` +
      `${fmt(med('wheel-jobs', 'delivered_per_s', k, 'redis_cpu_pct'))}% | ${nodeCpu.join(' + ')} | ` +
      `${fmt(med('wheel-jobs', 'delivered_per_s', k, 'client_cpu_pct'))}% | ` +
      `${saturates('wheel-jobs', 'delivered_per_s', k)} | ` +
      `${fmt(med('wheel-jobs', 'e2e_delivered_per_s', k))} | ` +
      `${fmt(med('wheel-jobs', 'e2e_lateness_p99_ms', k))} | ` +
      `${fmt(med('wheel-jobs', 'e2e_commands_per_job', k))} | ` +
      `${saturates('wheel-jobs', 'e2e_delivered_per_s', k)} |`);
  }
}

// Which part saturated first in each phase (cpu-watch.js): every round's verdict, and the
// busiest second of each part (median over rounds, % of one core) and of the machine.
const PHASES = [['add', 'added_per_s'], ['deliver (all due)', 'delivered_per_s'],
  ['deliver (all due), wheel::jobs in the worker', 'lib_delivered_per_s'],
  ['end to end', 'e2e_delivered_per_s']];
const satRows = [];
for (const peer of ['bullmq', 'plain', 'wheel-jobs']) {
  for (const [phase, metric] of PHASES) {
    const rs = pick(peer, metric, 1).filter((r) => r.peak_cpu_pct);
    if (!rs.length) continue;
    const peakOf = (label) => {
      const n = rs[0].peak_cpu_pct[label] ? rs[0].peak_cpu_pct[label].length : 0;
      return Array.from({ length: n }, (_, i) =>
        pct(median(rs.map((r) => (r.peak_cpu_pct[label] || [])[i])))).join(' + ') || '—';
    };
    satRows.push(`| ${peer} | ${phase} | ${peakOf('redis')} | ${peakOf('node')} | ` +
      `${peakOf('producer')} | ${peakOf('worker')} | ` +
      `${pct(median(rs.map((r) => r.peak_machine_cpu_pct)))} | ${saturates(peer, metric, 1)} |`);
  }
}
if (satRows.length) {
  lines.push('', 'Which part saturates first (busiest second of each process, % of one core; ' +
    'machine: every process, % of all cores; a one-thread part at ≥ 90% saturates, else the ' +
    'cores at ≥ 90%, else none: round trips or the workload set the pace):', '');
  lines.push('| peer | phase | Redis | wheel-jobs node | producer | worker | machine | saturates |');
  lines.push('|---|---|---|---|---|---|---|---|');
  lines.push(...satRows);
}

// Error replies the drivers counted and retried (wheel-jobs' INTERNAL_ERROR when Redis did not
// answer in time), and rounds that failed (no record of a metric).
const counted = (r) => Object.entries(r.errors || {}).filter(([, v]) => v > 0);
const errs = recs.filter((r) => counted(r).length);
if (errs.length) {
  lines.push('', 'Error replies, counted and retried after 50 ms by the drivers:');
  for (const r of errs) {
    const what = counted(r).map(([k, v]) => `${v}× ${k}`).join(', ');
    lines.push(`- ${r.peer}${r.nodes ? ` (${r.nodes} node${r.nodes > 1 ? 's' : ''})` : ''}, ` +
      `round ${r.round}, ${r.metric}: ${what}`);
  }
}

// End-to-end phases that did not deliver every job in time (the round's later phases are missing).
for (const r of recs.filter((x) => x.metric === 'e2e_failed')) {
  const where = r.nodes ? ` (${r.nodes} node${r.nodes > 1 ? 's' : ''})` : '';
  lines.push('', `End to end FAILED: ${r.peer}${where}, ` +
    `round ${r.round}: ${r.value.toLocaleString('en-US')} of ${r.n.toLocaleString('en-US')} jobs ` +
    `delivered in ${r.timeout_secs} s (saturates: ${r.saturates}).`);
}

// Where each peer's Redis time goes while it delivers: CPU of Redis and of the consumer.
lines.push('', 'CPU while delivering (median % of one core): Redis / consumer process');
for (const peer of ['bullmq', 'plain', 'wheel-jobs']) {
  const r = med(peer, 'delivered_per_s', 1, 'redis_cpu_pct');
  if (r === null) continue;
  lines.push(`- ${peer}: Redis ${fmt(r)}%, worker ${fmt(med(peer, 'delivered_per_s', 1, 'client_cpu_pct'))}%`);
}
process.stdout.write(lines.join('\n') + '\n');
