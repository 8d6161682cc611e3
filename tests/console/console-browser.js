// SPDX-License-Identifier: Apache-2.0
// The web console in a real browser: Debian's chromium, headless, driven by playwright-core,
// against a wheel-jobs already started with --http-port (run-browser-test.sh starts it).
// Usage: node console-browser.js BEANSTALK_PORT HTTP_PORT ARTIFACT_DIR MODE
// Seeds known tubes over beanstalkd's protocol, then checks what a user sees and does: the
// counts, deliveries per second and the oldest ready job's age, a kick of buried jobs, paging
// past the first 100 jobs, a move to another tube, a job template, a job found by id and its
// page, a search in bodies, a pause, an HTML body shown as text, and an action without its token
// refused. Screenshots go to ARTIFACT_DIR. Every wait is bounded (10 s); exit 0 = passed.
"use strict";
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const [beanstalkPort, httpPort, artifacts, mode] = process.argv.slice(2);
const base = `http://127.0.0.1:${httpPort}`;
const XSS = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`;
fs.mkdirSync(artifacts, { recursive: true });

// One beanstalkd connection: send a command, read one reply (with its body for RESERVED).
function beanstalk() {
  const sock = net.connect(Number(beanstalkPort), "127.0.0.1");
  let buffer = Buffer.alloc(0);
  let waiter = null;
  sock.on("data", (d) => {
    buffer = Buffer.concat([buffer, d]);
    if (waiter) waiter();
  });
  const line = () => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no reply in 10 s")), 10000);
    const check = () => {
      const end = buffer.indexOf("\r\n");
      if (end < 0) return;
      const text = buffer.subarray(0, end).toString();
      const need = /^RESERVED \d+ (\d+)/.exec(text);
      if (need && buffer.length < end + 2 + Number(need[1]) + 2) return;
      const total = need ? end + 2 + Number(need[1]) + 2 : end + 2;
      buffer = buffer.subarray(total);
      clearTimeout(timer);
      waiter = null;
      resolve(text);
    };
    waiter = check;
    check();
  });
  return {
    async cmd(text, body) {
      sock.write(body === undefined ? `${text}\r\n` : `${text}\r\n${body}\r\n`);
      return line();
    },
    close: () => sock.end(),
  };
}

async function seed() {
  const c = beanstalk();
  const ids = {};
  await c.cmd("use emails");
  for (let i = 0; i < 3; i++) await c.cmd("put 100 0 60 " + `order-${i}`.length, `order-${i}`);
  await c.cmd("use reports");
  for (let i = 0; i < 2; i++) await c.cmd("put 100 3600 60 6", `report`);
  await c.cmd("use failed");
  await c.cmd("watch failed");
  await c.cmd("ignore default");
  for (let i = 0; i < 4; i++) {
    const body = `failed-payment-${i}`;
    ids[body] = Number(/INSERTED (\d+)/.exec(await c.cmd(`put 10 0 60 ${body.length}`, body))[1]);
  }
  for (let i = 0; i < 4; i++) {
    const id = Number(/RESERVED (\d+)/.exec(await c.cmd("reserve-with-timeout 5"))[1]);
    if (!/BURIED/.test(await c.cmd(`bury ${id} 10`))) throw new Error(`bury ${id}`);
  }
  // Deliveries for the lateness chart: a worker waits in reserve while each job's delay ends.
  const worker = beanstalk();
  await worker.cmd("watch ticks");
  await c.cmd("use ticks");
  for (let i = 0; i < 20; i++) {
    await c.cmd("put 0 0.020 60 4", "tick");
    const id = /RESERVED (\d+)/.exec(await worker.cmd("reserve-with-timeout 5"))[1];
    await worker.cmd(`delete ${id}`);
  }
  worker.close();
  await c.cmd("put 0 0 60 4", "left"); // the tube stays, with its deliveries counted
  await c.cmd("use bulk"); // 130 ready jobs: paging past the first 100
  for (let i = 0; i < 130; i++) await c.cmd(`put 100 0 60 ${`bulk-${i}`.length}`, `bulk-${i}`);
  await c.cmd("use xss");
  ids.xss = Number(/INSERTED (\d+)/.exec(await c.cmd(`put 0 0 60 ${Buffer.byteLength(XSS)}`, XSS))[1]);
  c.close();
  return ids;
}

async function main() {
  const ids = await seed();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "wheel-console-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.WHEEL_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
    viewport: { width: 1280, height: 860 },
    timeout: 30000,
  });
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(10000);
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: path.join(artifacts, name), fullPage: true });
  const cellText = (tube, field) =>
    page.locator(`tr[data-tube="${tube}"] td[data-field="${field}"]`).innerText();
  const waitCell = async (tube, field, want) => {
    await page.waitForFunction(([t, f, w]) => {
      const td = document.querySelector(`tr[data-tube="${t}"] td[data-field="${f}"]`);
      return td && td.textContent.startsWith(w);
    }, [tube, field, want]);
  };
  const check = (ok, what) => {
    if (!ok) throw new Error(`FAILED: ${what}`);
    console.log(`ok - ${what}`);
  };

  // 1. The overview shows every tube with its counts.
  await page.goto(`${base}/`);
  await waitCell("emails", "ready", "3");
  check(await cellText("reports", "delayed") === "2", "overview: reports has 2 delayed");
  check(await cellText("failed", "buried") === "4", "overview: failed has 4 buried");
  check(await cellText("xss", "ready") === "1", "overview: xss has 1 ready");
  await page.waitForTimeout(1500); // a second poll: rates and the lateness chart drawn
  // Deliveries per second and the oldest ready job's age are known on every backend (Redis too).
  await page.waitForFunction(() => {
    const td = document.querySelector('tr[data-tube="ticks"] td[data-field="deliveries"]');
    return td && td.textContent !== "–";
  });
  check(await cellText("emails", "oldest") !== "–", "overview: emails has an oldest ready age");
  const o = await (await fetch(`${base}/api/overview`)).json();
  const ticks = o.tubes.find((t) => t.name === "ticks");
  const emails = o.tubes.find((t) => t.name === "emails");
  check(ticks.deliveries === 20 && ticks.deliveries_per_second !== null,
    `overview (${mode}): ticks has 20 deliveries and a rate`);
  check(emails.oldest_ready_ms !== null,
    `overview (${mode}): the oldest ready age of emails is known`);
  await shot("overview.png");

  // 2. Kick 2 of the buried jobs from the tube page; the count changes.
  await page.goto(`${base}/tubes/failed`);
  await page.waitForSelector('#list-buried tr[data-job]');
  check(await page.locator("#list-buried tr[data-job]").count() === 4, "tube page lists 4 buried");
  await page.fill("#kick-n", "2");
  await page.click("button:has-text('Kick') >> nth=0");
  await page.waitForFunction(() =>
    document.querySelector('[data-card="buried"] .value').textContent === "2");
  check(true, "kick 2: buried 4 -> 2 on the tube page");
  await page.waitForFunction(() =>
    document.querySelector('[data-card="ready"] .value').textContent === "2");
  await shot("tube.png");

  // 2b. Page through 130 ready jobs 20 at a time, past the first 100.
  await page.goto(`${base}/tubes/bulk`);
  await page.waitForFunction(() => document.getElementById("pos-ready").textContent === "1–20 of 130");
  check(await page.isDisabled("#prev-ready"), "paging: no previous page at first");
  for (let i = 0; i < 6; i++) await page.click("#next-ready");
  await page.waitForFunction(() => document.getElementById("pos-ready").textContent === "121–130 of 130");
  check(await page.locator("#list-ready tr[data-job]").count() === 10, "paging: the last page has 10 jobs");
  check((await page.locator("#list-ready td.preview").first().innerText()) === "bulk-120",
    "paging: the 121st job first on the last page");
  check(await page.isDisabled("#next-ready"), "paging: no next page at the end");
  check(/ready=120/.test(page.url()), "paging: the page's offset is in its URL");
  await shot("tube-paged.png");
  await page.click("#prev-ready");
  await page.waitForFunction(() => document.getElementById("pos-ready").textContent === "101–120 of 130");
  check(true, "paging: previous goes back one page");

  // 2c. Move 5 ready jobs from bulk to another tube; both counts change.
  await page.fill("#move-n", "5");
  await page.selectOption("#move-state", "ready");
  await page.fill("#move-to", "bulk-moved");
  await page.click("button:has-text('Move')");
  await page.waitForFunction(() =>
    document.querySelector('[data-card="ready"] .value').textContent === "125");
  const moved = await (await fetch(`${base}/api/tubes/bulk-moved`)).json();
  check(moved.tube.ready === 5 && moved.ready[0].body === "bulk-0",
    "move: 5 jobs in bulk-moved, the first of bulk first");

  // 2d. Save the add-job form as a template, load it again after a reload, and add from it.
  await page.fill("#put-body", "from-a-template");
  await page.fill("#put-pri", "7");
  await page.fill("#put-delay", "0");
  await page.fill("#template-name", "nightly");
  await page.click("#template-save");
  await page.reload();
  await page.waitForSelector('#template-choose option[value="nightly"]', { state: "attached" });
  await page.selectOption("#template-choose", "nightly");
  check(await page.inputValue("#put-body") === "from-a-template" &&
    await page.inputValue("#put-pri") === "7", "template: kept in the browser and fills the form");
  await shot("tube-template.png");
  await page.click("button:has-text('Put')");
  await page.waitForFunction(() =>
    document.querySelector('[data-card="ready"] .value').textContent === "126");
  const found = await (await fetch(`${base}/api/tubes/bulk/search?q=from-a-template`)).json();
  check(found.hits.length === 1 && found.hits[0].priority === 7, "template: the job put from it");

  // 3. A body search on the tube page finds the job by its payload within the stated bound.
  await page.goto(`${base}/tubes/failed`);
  await page.waitForSelector('#list-buried tr[data-job]');
  await page.fill("#search-q", "payment-3");
  await page.click("#search button[type=submit]");
  await page.waitForSelector("#search-result tr[data-job]");
  check(await page.locator("#search-result tr[data-job]").count() === 1, "search by body: 1 hit");
  check(/among \d+ jobs looked at/.test(await page.locator("#search-result p").innerText()),
    "search says how many jobs it looked at");

  // 4. Search a job by id (the header's box) and open its page.
  const id = ids["failed-payment-1"];
  await page.fill("#goto-id", String(id));
  await page.press("#goto-id", "Enter");
  await page.waitForURL(`${base}/jobs/${id}`);
  await page.waitForSelector("#job-body");
  check(await page.locator("#job-body").innerText() === "failed-payment-1", "job page shows the body");
  check(await page.locator('td[data-field="tube"], #job-stats a').first().innerText() === "failed",
    "job page names its tube");
  await shot("job.png");

  // 5. Pause a tube; the overview says so.
  await page.goto(`${base}/tubes/emails`);
  await page.waitForSelector('[data-card="paused"]');
  await page.fill("#pause-s", "600");
  await page.click("button:has-text('Pause')");
  await page.waitForFunction(() =>
    document.querySelector('[data-card="paused"] .value').textContent.startsWith("yes"));
  await page.goto(`${base}/`);
  await waitCell("emails", "paused", "paused");
  check(true, "pause: the overview shows emails paused");

  // 6. A body of HTML and script is shown as text and never runs.
  await page.goto(`${base}/jobs/${ids.xss}`);
  await page.waitForSelector("#job-body");
  check(await page.locator("#job-body").innerText() === XSS, "xss body shown as its text");
  check(await page.locator("#job-body img, #job-body script").count() === 0, "no element made of it");
  await page.goto(`${base}/tubes/xss`);
  await page.waitForSelector("#list-ready td.preview");
  check((await page.locator("#list-ready td.preview").innerText()).startsWith("<img src=x"),
    "xss preview shown as text");
  await page.waitForTimeout(1200);
  check(await page.evaluate(() => window.__xss) === undefined, "the body's script never ran");
  await shot("xss.png");

  // 7. An action without its token is refused, and changes nothing.
  const refused = await page.evaluate(async () => {
    const r = await fetch("/api/tubes/failed/kick", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: '{"count": 10}' });
    return r.status;
  });
  check(refused === 403, `a kick without the token answers ${refused} (403)`);
  const after = await (await fetch(`${base}/api/tubes/failed`)).json();
  check(after.tube.buried === 2, "and the buried count is unchanged (2)");

  check(pageErrors.length === 0, `no script errors in the page (${pageErrors.join("; ")})`);
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}

const deadline = setTimeout(() => {
  console.error("FAILED: the browser test took over 120 s");
  process.exit(1);
}, 120000);
main().then(() => {
  clearTimeout(deadline);
  console.log("console browser test passed");
}, (e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
