// SPDX-License-Identifier: Apache-2.0
// Which part of a fleet benchmark phase saturates first: samples the CPU time of every process
// of the phase (Redis, wheel-jobs nodes, the load clients) once a second from /proc and keeps
// each part's average and its busiest second, then names the part that ran out of CPU. Redis's
// command loop, a Node process's event loop and a wheel-jobs node's loop each run on one thread,
// so a part near 100% of one core is the limit; with every part below that but the machine's
// cores near full (these processes or others: say so on a loaded machine), the cores are the
// limit; else nothing saturated (the phase was paced by its workload or by round trips).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const { cpuSecs } = require('./procs');

// The machine's CPU seconds so far, all cores: {busy, all} from /proc/stat's first line.
function machineSecs() {
  try {
    const f = fs.readFileSync('/proc/stat', 'latin1').split('\n')[0].trim().split(/\s+/).slice(1)
      .map(Number);
    const all = f.slice(0, 8).reduce((a, b) => a + b, 0); // user .. steal
    return { busy: all - f[3] - f[4], all }; // less idle and iowait
  } catch {
    return { busy: 0, all: 0 };
  }
}

const BUSY_PCT = 90; // a one-thread part at this share of a core (busiest second) is saturated

class CpuWatch {
  // `parts()` returns the processes to watch now: [{label, pid}]; a label may repeat (two
  // nodes) and the list may grow while the watch runs (a client started mid-phase).
  constructor(parts, intervalMs = 1000) {
    this.parts = parts;
    this.intervalMs = intervalMs;
    this.seen = new Map(); // pid -> {label, first, last, peak}: CPU seconds, peak % of a core
  }

  start() {
    this.t0 = performance.now();
    this.peakTotal = 0;
    this.peakMachine = 0;
    this.machine0 = machineSecs();
    this.machineLast = this.machine0;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    return this;
  }

  sample() {
    const now = performance.now();
    const first = this.lastAt === undefined;
    const span = first ? 0 : (now - this.lastAt) / 1000;
    const full = span >= this.intervalMs / 2000; // a short last span would make a noisy peak
    let used = 0;
    for (const { label, pid } of this.parts()) {
      const c = cpuSecs(pid);
      let s = this.seen.get(pid);
      if (!s) {
        // Seen after the start: a client started inside the phase, so all its CPU counts.
        s = { label, first: first ? c : 0, last: first ? c : 0, peak: 0 };
        this.seen.set(pid, s);
      }
      if (c < s.last) continue; // exited: /proc has nothing more (cpuSecs gives 0)
      const d = c - s.last;
      if (full) s.peak = Math.max(s.peak, (100 * d) / span);
      used += d;
      s.last = c;
    }
    const m = machineSecs();
    if (full) {
      this.peakTotal = Math.max(this.peakTotal, (100 * used) / span);
      const all = m.all - this.machineLast.all;
      if (all > 0) {
        const busy = (100 * (m.busy - this.machineLast.busy)) / all;
        this.peakMachine = Math.max(this.peakMachine, busy);
      }
      this.machineLast = m;
    }
    this.lastAt = now;
  }

  // Stops sampling; returns {avg: {label: [pct...]}, peak: {label: [pct...]}, peak_total (the
  // busiest second of these processes together, % of one core), machine_pct and
  // peak_machine_pct (every process on the machine, % of all cores), saturates}; `override`
  // {pid: CPU seconds} gives the totals of processes that reported their own (a client that
  // exited before the last sample).
  stop(override = {}) {
    this.sample();
    clearInterval(this.timer);
    const wall = (performance.now() - this.t0) / 1000;
    const avg = {};
    const peak = {};
    for (const [pid, s] of this.seen) {
      const used = override[pid] !== undefined ? override[pid] : s.last - s.first;
      (avg[s.label] ||= []).push(Math.round((100 * used) / wall));
      (peak[s.label] ||= []).push(Math.round(Math.min(s.peak, 100 * os.cpus().length)));
    }
    const peakTotal = Math.round(this.peakTotal);
    const m = machineSecs();
    const all = m.all - this.machine0.all;
    const machine = all > 0 ? Math.round((100 * (m.busy - this.machine0.busy)) / all) : null;
    const peakMachine = Math.round(this.peakMachine);
    return { avg, peak, peak_total: peakTotal, machine_pct: machine,
      peak_machine_pct: peakMachine, saturates: saturation(peak, peakMachine) };
  }
}

// The part whose busiest second reached BUSY_PCT of a core (the busiest such part), else
// "cores" when the machine's busiest second (every process, ours or not) reached BUSY_PCT of
// all its cores, else "none".
function saturation(peak, peakMachinePct) {
  let best = null;
  for (const [label, pcts] of Object.entries(peak)) {
    for (const p of pcts) if (p >= BUSY_PCT && (!best || p > best.p)) best = { label, p };
  }
  if (best) return best.label;
  return peakMachinePct >= BUSY_PCT ? 'cores' : 'none';
}

module.exports = { CpuWatch, saturation, BUSY_PCT };
