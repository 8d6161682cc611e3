// SPDX-License-Identifier: Apache-2.0
// Job templates for the console's "Add a job" form (as beanstalk_console has them): a named
// body, priority, delay and TTR, kept in this browser's localStorage (per origin, shared by
// every tube; the server keeps none). console.js calls wheelTemplates.form(el, fields, flash).
"use strict";
window.wheelTemplates = (() => {
  const KEY = "wheel-job-templates";
  const MAX = 100; // templates kept; bodies are bounded by the put's own limit
  function load() {
    try {
      const t = JSON.parse(localStorage.getItem(KEY) || "{}");
      return t && typeof t === "object" && !Array.isArray(t) ? t : {};
    } catch (e) {
      return {};
    }
  }
  function store(all) {
    localStorage.setItem(KEY, JSON.stringify(all));
  }
  // The template bar: a chooser that fills the form, a name and Save, Delete. `fields` holds the
  // form's inputs (body, priority, delay, ttr); `flash(text, isError)` reports.
  function form(el, fields, flash) {
    const choose = el("select", { id: "template-choose" });
    const name = el("input", { id: "template-name", placeholder: "template name", size: 16 });
    function fill() {
      const all = load();
      const names = Object.keys(all).sort();
      choose.replaceChildren(el("option", { value: "" }, names.length ? "use a template…" : "no templates"),
        ...names.map((n) => el("option", { value: n }, n)));
    }
    choose.addEventListener("change", () => {
      const t = load()[choose.value];
      if (!t) return;
      fields.body.value = t.body;
      fields.priority.value = t.priority;
      fields.delay.value = t.delay;
      fields.ttr.value = t.ttr;
      name.value = choose.value;
    });
    const save = el("button", { id: "template-save", type: "button", onclick: () => {
      const n = name.value.trim();
      if (!n) return flash("a template needs a name", true);
      const all = load();
      if (!(n in all) && Object.keys(all).length >= MAX) {
        return flash(`at most ${MAX} templates; delete one first`, true);
      }
      all[n] = { body: fields.body.value, priority: Number(fields.priority.value),
        delay: Number(fields.delay.value), ttr: Number(fields.ttr.value) };
      store(all);
      fill();
      choose.value = n;
      flash(`template '${n}' saved in this browser`);
    } }, "Save as template");
    const remove = el("button", { id: "template-delete", type: "button", onclick: () => {
      const all = load();
      if (!(choose.value in all)) return flash("choose a template to delete", true);
      delete all[choose.value];
      store(all);
      fill();
      flash("template deleted");
    } }, "Delete template");
    fill();
    return el("div", { class: "bar" }, choose, name, save, remove);
  }
  return { form, load };
})();
