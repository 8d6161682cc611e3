// SPDX-License-Identifier: Apache-2.0
// wheel-jobs' web console: draws the view of the URL (/, /tubes/NAME, /jobs/ID) from the JSON API
// (docs/console.md) and polls it once a second, marking what changed. Every value from the
// server enters the page as text (textContent, never innerHTML): a job body holding HTML or
// script shows as those characters.
"use strict";
(() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`).content;
  const readOnly = meta("wheel-read-only") === "1";
  const tokenRequired = meta("wheel-token-required") === "1";
  let token = meta("wheel-token") || sessionStorage.getItem("wheel-token") || "";
  const view = document.getElementById("view");
  const previous = new Map(); // "key" -> last value shown, for highlighting changes

  // el("td", {class: "num"}, "text", child, ...): strings become text nodes, never markup.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  // A cell whose value is remembered under `key`; it flashes when the value changed.
  function cell(key, value, attrs) {
    const text = value === null || value === undefined ? "–" : String(value);
    const td = el("td", attrs, text);
    td.dataset.key = key;
    if (previous.has(key) && previous.get(key) !== text) td.classList.add("changed");
    previous.set(key, text);
    return td;
  }
  const fmtRate = (v) => (v === null || v === undefined ? null : v.toFixed(1));
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return null;
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    if (ms < 3600000) return `${(ms / 60000).toFixed(1)} min`;
    return `${(ms / 3600000).toFixed(1)} h`;
  }
  const tubeHref = (name) => `/tubes/${encodeURIComponent(name)}`;
  const jobHref = (id) => `/jobs/${id}`;

  function flash(text, isError) {
    const box = document.getElementById("flash");
    box.textContent = text;
    box.className = isError ? "error" : "";
    box.hidden = false;
    clearTimeout(flash.timer);
    flash.timer = setTimeout(() => (box.hidden = true), 6000);
  }
  async function api(path) {
    const headers = token ? { "X-Wheel-Token": token } : {};
    const r = await fetch(`/api/${path}`, { headers, cache: "no-store" });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw Object.assign(new Error(body.error || r.statusText), { status: r.status });
    return body;
  }
  async function post(path, args) {
    const r = await fetch(`/api/${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Wheel-Token": token },
      body: JSON.stringify(args || {}),
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }
  // A button that runs `action` and reports its answer.
  function actionButton(label, cls, action, done) {
    return el("button", {
      class: cls, disabled: readOnly, title: readOnly ? "read-only console" : undefined,
      onclick: async (e) => {
        e.preventDefault();
        try {
          const answer = await action();
          flash(done(answer));
          refresh();
        } catch (err) {
          flash(`${label}: ${err.message}`, true);
        }
      },
    }, label);
  }
  const seg = () => location.pathname.split("/").filter(Boolean).map(decodeURIComponent);

  // ---- overview: every tube ----
  let chart = null;
  function overviewSkeleton() {
    view.replaceChildren(
      el("h1", {}, "Tubes"),
      el("div", { id: "cards", class: "cards" }),
      el("table", { id: "tubes" }),
      el("div", { class: "grid2" },
        el("div", {}, el("h2", {}, "Delivery lateness over time (ms, per second)"),
          el("div", { id: "chart", class: "chart" })),
        el("div", {}, el("h2", {}, "Delivery lateness since start"), el("div", { id: "hist", class: "hist" }))));
  }
  function card(key, label, value) {
    const v = el("div", { class: "value" }, value === null ? "–" : String(value));
    if (previous.has(key) && previous.get(key) !== String(value)) v.classList.add("changed");
    previous.set(key, String(value));
    return el("div", { class: "card", "data-card": key }, el("div", { class: "label" }, label), v);
  }
  async function drawOverview() {
    const [o, lat] = await Promise.all([api("overview"), api("lateness")]);
    document.getElementById("cards").replaceChildren(
      card("tubes", "tubes", o.tubes_total), card("ready", "ready", o.ready),
      card("delayed", "delayed", o.delayed), card("reserved", "reserved", o.reserved),
      card("buried", "buried", o.buried), card("connections", "connections", o.connections),
      card("waiting", "waiting clients", o.waiting));
    const head = el("tr", {}, ["tube", "ready", "delayed", "reserved", "buried", "paused", "puts/s",
      "deliveries/s", "oldest ready", "using", "watching", "waiting"].map((h, i) =>
      el("th", { class: i > 0 && i !== 5 ? "num" : undefined,
        title: i === 8 ? "how long its longest-waiting ready job has waited" : undefined }, h)));
    const rows = o.tubes.map((t) => {
      const k = `t:${t.name}:`;
      return el("tr", { "data-tube": t.name },
        el("td", {}, el("a", { href: tubeHref(t.name) }, t.name)),
        cell(k + "ready", t.ready, { class: "num", "data-field": "ready" }),
        cell(k + "delayed", t.delayed, { class: "num", "data-field": "delayed" }),
        cell(k + "reserved", t.reserved, { class: "num", "data-field": "reserved" }),
        cell(k + "buried", t.buried, { class: t.buried ? "num buried-nonzero" : "num", "data-field": "buried" }),
        cell(k + "paused", t.paused ? `paused ${fmtMs(t.pause_left_ms)}` : "no",
          { class: t.paused ? "paused" : undefined, "data-field": "paused" }),
        cell(k + "puts", fmtRate(t.puts_per_second), { class: "num" }),
        cell(k + "del", fmtRate(t.deliveries_per_second), { class: "num", "data-field": "deliveries" }),
        cell(k + "wait", fmtMs(t.oldest_ready_ms), { class: "num", "data-field": "oldest" }),
        cell(k + "using", t.using, { class: "num" }),
        cell(k + "watching", t.watching, { class: "num" }),
        cell(k + "waiting", t.waiting, { class: "num" }));
    });
    document.getElementById("tubes").replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
    if (o.tubes_listed < o.tubes_total) {
      flash(`${o.tubes_listed} of ${o.tubes_total} tubes listed (the console's bound)`);
    }
    drawLateness(lat);
  }
  function drawLateness(lat) {
    const h = lat.histogram;
    const max = Math.max(1, ...h.counts);
    const rows = [];
    h.counts.forEach((n, i) => {
      const label = i < h.bounds_seconds.length ? `≤ ${h.bounds_seconds[i] * 1000} ms`
        : `> ${h.bounds_seconds[h.bounds_seconds.length - 1]} s`;
      rows.push(el("span", {}, label),
        el("span", {}, el("div", { class: "fill", style: undefined, "data-width": n / max })),
        el("span", { class: "num" }, String(n)));
    });
    const hist = document.getElementById("hist");
    hist.replaceChildren(...rows);
    hist.querySelectorAll(".fill").forEach((d) => (d.style.width = `${d.dataset.width * 100}%`));
    const pts = lat.history;
    const ms = (v) => (v === null ? null : v * 1000);
    const data = [pts.map((p) => p.at_ms / 1000), pts.map((p) => ms(p.p50)),
      pts.map((p) => ms(p.p90)), pts.map((p) => ms(p.p99))];
    const box = document.getElementById("chart");
    const width = Math.max(300, box.clientWidth - 16);
    if (!chart || chart.width !== width) {
      if (chart) chart.destroy();
      chart = new uPlot({
        width, height: 220,
        series: [{}, { label: "p50", stroke: "#2e7d32" }, { label: "p90", stroke: "#2557d6" },
          { label: "p99", stroke: "#c62828" }],
        axes: [{}, { label: "ms" }],
      }, data, box);
    } else {
      chart.setData(data);
    }
  }

  // ---- a tube ----
  function tubeSkeleton(name) {
    const num = (id, value, min, step) => el("input", { id, type: "number", value, min, step, size: 6 });
    view.replaceChildren(
      el("h1", {}, "Tube ", el("span", { id: "tube-name" }, name)),
      el("div", { id: "cards", class: "cards" }),
      el("div", { class: "bar" },
        "Kick", num("kick-n", 10, 1, 1), "jobs",
        actionButton("Kick", "primary", () => post(`tubes/${encodeURIComponent(name)}/kick`,
          { count: Number(document.getElementById("kick-n").value) }), (a) => `kicked ${a.kicked}`),
        el("span", { class: "muted" }, "·"),
        "Pause for", num("pause-s", 60, 0, 1), "s",
        actionButton("Pause", "", () => post(`tubes/${encodeURIComponent(name)}/pause`,
          { seconds: Number(document.getElementById("pause-s").value) }), () => "paused"),
        actionButton("Resume", "", () => post(`tubes/${encodeURIComponent(name)}/pause`, { seconds: 0 }),
          () => "resumed")),
      el("div", { class: "bar" },
        "Move", num("move-n", 10, 1, 1),
        el("select", { id: "move-state" }, ["ready", "delayed", "buried"].map((st) => el("option", { value: st }, st))),
        "jobs to tube", el("input", { id: "move-to", size: 16, placeholder: "other tube" }),
        actionButton("Move", "", () => post(`tubes/${encodeURIComponent(name)}/move`, {
          to: document.getElementById("move-to").value,
          state: document.getElementById("move-state").value,
          count: Number(document.getElementById("move-n").value),
        }), (a) => `moved ${a.moved} (new ids in the other tube)`)),
      el("fieldset", {}, el("legend", {}, "Find in bodies"),
        el("form", { id: "search", class: "bar" },
          el("input", { id: "search-q", placeholder: "text in the body (or #id)", size: 30 }),
          "looking at up to", num("search-scan", 1000, 1, 1), "jobs",
          el("button", { type: "submit" }, "Search")),
        el("div", { id: "search-result" })),
      el("fieldset", { id: "add-job" }, el("legend", {}, "Add a job"),
        el("div", { class: "bar" },
          el("textarea", { id: "put-body", rows: 2, cols: 50, placeholder: "body" }),
          "priority", num("put-pri", 1024, 0, 1), "delay s", num("put-delay", 0, 0, "any"),
          "TTR s", num("put-ttr", 60, 0, "any"),
          actionButton("Put", "primary", () => post(`tubes/${encodeURIComponent(name)}/put`, {
            body: document.getElementById("put-body").value,
            priority: Number(document.getElementById("put-pri").value),
            delay: Number(document.getElementById("put-delay").value),
            ttr: Number(document.getElementById("put-ttr").value),
          }), (a) => `put job ${a.id}`))),
      ...["ready", "delayed", "buried"].flatMap((st) => [
        el("h2", {}, st[0].toUpperCase() + st.slice(1), " ", el("span", { id: `pos-${st}`, class: "muted" }),
          el("button", { id: `prev-${st}`, type: "button", onclick: () => turn(st, -1) }, "‹ previous"),
          el("button", { id: `next-${st}`, type: "button", onclick: () => turn(st, 1) }, "next ›")),
        el("table", { id: `list-${st}` })]));
    const field = (id) => document.getElementById(id);
    field("add-job").append(wheelTemplates.form(el, { body: field("put-body"),
      priority: field("put-pri"), delay: field("put-delay"), ttr: field("put-ttr") }, flash));
    document.getElementById("search").addEventListener("submit", (e) => {
      e.preventDefault();
      search(name);
    });
  }
  function jobRows(jobs, state) {
    const head = el("tr", {}, el("th", { class: "num" }, "id"), el("th", { class: "num" }, "priority"),
      el("th", { class: "num" }, "bytes"),
      state === "delayed" ? el("th", { class: "num" }, "ready in") : null,
      el("th", {}, "body"), el("th", {}, ""));
    const rows = jobs.map((j) => el("tr", { "data-job": j.id },
      el("td", { class: "num" }, el("a", { href: jobHref(j.id) }, String(j.id))),
      el("td", { class: "num" }, String(j.priority)),
      el("td", { class: "num" }, String(j.body_size)),
      state === "delayed" ? el("td", { class: "num" }, fmtMs(j.time_left_ms)) : null,
      el("td", { class: "preview" }, j.body + (j.body_complete ? "" : " …")),
      el("td", {}, state !== "ready" && state !== "reserved"
        ? actionButton("Kick", "", () => post(`jobs/${j.id}/kick`), () => `kicked job ${j.id}`) : null,
      actionButton("Delete", "danger", () => post(`jobs/${j.id}/delete`), () => `deleted job ${j.id}`))));
    if (!rows.length) rows.push(el("tr", {}, el("td", { class: "muted", colspan: 6 }, "none")));
    return [el("thead", {}, head), el("tbody", {}, rows)];
  }
  async function search(name) {
    const q = document.getElementById("search-q").value;
    const m = /^#?(\d+)$/.exec(q.trim());
    if (m && q.trim().startsWith("#")) { location.href = jobHref(m[1]); return; }
    const box = document.getElementById("search-result");
    try {
      const scan = Number(document.getElementById("search-scan").value);
      const r = await api(`tubes/${encodeURIComponent(name)}/search?q=${encodeURIComponent(q)}&scan=${scan}`);
      box.replaceChildren(el("p", { class: "muted" },
        `${r.hits.length} found among ${r.scanned} jobs looked at` +
        (r.complete ? " (the whole tube)" : ` (bound: ${r.scan_bound}; the tube holds more)`)),
        el("table", {}, jobRows(r.hits, "found")));
    } catch (err) {
      box.replaceChildren(el("p", { class: "muted" }, err.message));
    }
  }
  // Paging: each list's offset is in the URL (?ready=40&buried=20), so a page can be shared.
  const PAGE = 20;
  const offsetOf = (st) => Math.max(0, Number(new URLSearchParams(location.search).get(st)) || 0);
  function turn(st, step) {
    const q = new URLSearchParams(location.search);
    const next = Math.max(0, offsetOf(st) + step * PAGE);
    if (next) q.set(st, next); else q.delete(st);
    history.replaceState(null, "", location.pathname + (q.toString() ? `?${q}` : ""));
    refresh();
  }
  async function drawTube(name) {
    const v = await api(`tubes/${encodeURIComponent(name)}?jobs=${PAGE}` +
      `&ready_offset=${offsetOf("ready")}&delayed_offset=${offsetOf("delayed")}&buried_offset=${offsetOf("buried")}`);
    const t = v.tube;
    document.getElementById("cards").replaceChildren(
      card("ready", "ready", t.ready), card("delayed", "delayed", t.delayed),
      card("reserved", "reserved", t.reserved), card("buried", "buried", t.buried),
      card("urgent", "urgent", t.urgent),
      card("paused", "paused", t.paused ? `yes, ${fmtMs(t.pause_left_ms)}` : "no"),
      card("puts", "jobs put", t.puts), card("deliveries", "deliveries", t.deliveries),
      card("wait", "head ready wait", fmtMs(t.head_wait_ms)),
      card("oldest", "oldest ready", fmtMs(t.oldest_ready_ms)),
      card("clients", "using / watching / waiting", `${t.using} / ${t.watching} / ${t.waiting}`));
    for (const s of ["ready", "delayed", "buried"]) {
      document.getElementById(`list-${s}`).replaceChildren(...jobRows(v[s], s));
      const from = v.offsets[s];
      document.getElementById(`pos-${s}`).textContent = v[s].length
        ? `${from + 1}–${from + v[s].length} of ${t[s]}` : `${t[s]} in all`;
      document.getElementById(`prev-${s}`).disabled = from === 0;
      // the API's bound on an offset: past it, search finds what paging cannot reach
      document.getElementById(`next-${s}`).disabled = from + v.page_size >= t[s] || from + PAGE > 100000;
    }
  }

  // ---- a job ----
  function jobSkeleton(id) {
    view.replaceChildren(el("h1", {}, `Job ${id}`), el("div", { id: "job" }));
  }
  async function drawJob(id) {
    const j = await api(`jobs/${id}`);
    const stats = [["tube", el("a", { href: tubeHref(j.tube) }, j.tube)], ["state", j.state],
      ["priority", j.priority], ["age", fmtMs(j.age_ms)], ["delay", fmtMs(j.delay_ms)],
      ["ttr", fmtMs(j.ttr_ms)], ["time left", fmtMs(j.time_left_ms)], ["reserves", j.reserves],
      ["timeouts", j.timeouts], ["releases", j.releases], ["buries", j.buries], ["kicks", j.kicks],
      ["body bytes", j.body_size]];
    const table = el("table", { id: "job-stats" }, el("tbody", {}, stats.map(([k, v]) =>
      el("tr", {}, el("th", {}, k), v instanceof Node ? el("td", {}, v) : cell(`j:${k}`, v, { "data-field": k })))));
    document.getElementById("job").replaceChildren(
      el("div", { class: "bar" },
        j.state === "buried" || j.state === "delayed"
          ? actionButton("Kick", "primary", () => post(`jobs/${id}/kick`), () => `kicked job ${id}`) : null,
        actionButton("Delete", "danger", async () => {
          await post(`jobs/${id}/delete`);
          setTimeout(() => (location.href = tubeHref(j.tube)), 600);
        }, () => `deleted job ${id}`)),
      table, el("h2", {}, "Body"), el("pre", { id: "job-body", class: "body" }, j.body));
  }

  // ---- the loop ----
  let draw = null;
  async function refresh() {
    if (!draw) return;
    const live = document.getElementById("live");
    try {
      await draw();
      live.classList.remove("stale");
      live.textContent = "live";
    } catch (err) {
      live.classList.add("stale");
      live.textContent = err.status === 404 ? "gone" : "offline";
      if (err.status === 401) return askToken();
      if (err.status === 404) view.querySelector("#gone") ||
        view.prepend(el("p", { id: "gone", class: "muted" }, err.message));
    }
  }
  function askToken() {
    draw = null;
    const input = el("input", { id: "token", type: "password", size: 40 });
    view.replaceChildren(el("h1", {}, "Token"), el("form", { class: "bar", onsubmit: (e) => {
      e.preventDefault();
      token = input.value;
      sessionStorage.setItem("wheel-token", token);
      start();
    } }, "This console needs its token (--http-token):", input, el("button", { type: "submit" }, "Open")));
  }
  function start() {
    const parts = seg();
    const crumbs = document.getElementById("crumbs");
    if (parts[0] === "tubes" && parts.length === 2) {
      crumbs.replaceChildren(el("a", { href: "/" }, "tubes"), " / ", parts[1]);
      tubeSkeleton(parts[1]);
      draw = () => drawTube(parts[1]);
    } else if (parts[0] === "jobs" && parts.length === 2) {
      crumbs.replaceChildren(el("a", { href: "/" }, "tubes"), " / job ", parts[1]);
      jobSkeleton(parts[1]);
      draw = () => drawJob(parts[1]);
    } else {
      crumbs.replaceChildren("tubes");
      overviewSkeleton();
      draw = drawOverview;
    }
    refresh();
  }
  document.getElementById("backend").textContent = meta("wheel-backend");
  document.getElementById("mode").textContent = readOnly ? "read-only" : "";
  document.getElementById("goto").addEventListener("submit", (e) => {
    e.preventDefault();
    const id = document.getElementById("goto-id").value.trim().replace(/^#/, "");
    if (/^\d+$/.test(id)) location.href = jobHref(id);
    else flash("a job id is a whole number", true);
  });
  if (tokenRequired && !token) askToken(); else start();
  setInterval(refresh, 1000);
})();
