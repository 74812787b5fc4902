// sextant dashboard: plain JavaScript over the /api/v1 JSON API. Every
// value from the API is put in the page as text (textContent), never as
// HTML; the one drawing the server sends, the forest plot (forest_svg),
// goes through svgOf, which keeps only its drawing elements. Writes send JSON with X-Requested-With, which a cross-site form
// cannot; the server also checks Sec-Fetch-Site and Origin.
"use strict";

const main = document.getElementById("main");
const tokenInput = document.getElementById("token");
let refreshTimer = null;

function token() {
  return sessionStorage.getItem("sextant-token") || "";
}
tokenInput.value = token();
document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  sessionStorage.setItem("sextant-token", tokenInput.value.trim());
  route();
});

// h builds an element: h("a", {href: "#/"}, "text", child, …).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(method, path, body) {
  const headers = { "X-Requested-With": "sextant-dashboard" };
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch("/api/v1" + path, init);
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!resp.ok) {
    const msg = data && data.error ? data.error.message : resp.status + " " + text;
    const err = new Error(msg);
    err.status = resp.status;
    throw err;
  }
  return data;
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat());
}

function errorBox(err) {
  return h("div", { class: "error-box", role: "alert" }, err.status === 401 ? "The server needs a bearer token: enter it above. " : "", err.message);
}

function fmtTime(s) {
  if (!s) return "";
  const d = new Date(s);
  return isNaN(d) ? s : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}
function fmtNum(x, digits) {
  if (x === undefined || x === null || isNaN(x)) return "";
  return Number(x).toFixed(digits === undefined ? 3 : digits);
}
function fmtMs(ms) {
  if (ms < 1) return (ms * 1000).toFixed(0) + " µs";
  if (ms < 1000) return ms.toFixed(1) + " ms";
  return (ms / 1000).toFixed(2) + " s";
}
function statusCell(s) {
  return h("span", { class: "status-" + s }, s);
}
// workersNote marks a Temporal run no worker answered for: its status is
// Temporal's record (running), its status now unknown.
function workersNote(workers) {
  if (!workers) return null;
  return h("span", { class: "muted workers-none", title: "no worker answered for this run: its status now is unknown; answers, messages and cancels wait for a worker" }, " workers: " + workers);
}
function attr(sp, name) {
  return sp.attributes ? sp.attributes[name] : undefined;
}
function prettyJSON(v) {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v, null, 2);
}

// ---- runs ----------------------------------------------------------------

async function runsPage(params) {
  const form = h("form", { class: "filters", id: "run-filters" },
    h("label", {}, "pipeline", h("input", { name: "pipeline", value: params.get("pipeline") || "" })),
    h("label", {}, "status", h("select", { name: "status" }, ["", "running", "waiting", "incident", "interrupted", "completed", "failed", "cancelled"].map((s) => h("option", { value: s, selected: params.get("status") === s }, s || "any")))),
    h("label", {}, "tag", h("input", { name: "tag", value: params.get("tag") || "" })),
    h("label", {}, "reward tag", h("input", { name: "reward_tag", value: params.get("reward_tag") || "" })),
    h("label", {}, "min reward", h("input", { name: "min_reward", type: "number", step: "0.1", min: "-1", max: "1", value: params.get("min_reward") || "" })),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) q.set(k, v);
    location.hash = "#/?" + q.toString();
  });
  const q = new URLSearchParams();
  for (const k of ["pipeline", "status", "tag", "reward_tag", "min_reward", "cursor", "limit"]) if (params.get(k)) q.set(k, params.get(k));
  if (!q.has("limit")) q.set("limit", "50");
  const body = h("div", { id: "runs" });
  show(h("h1", {}, "Runs"), form, body);
  const load = async () => {
    try {
      const page = await api("GET", "/tasks?" + q.toString());
      const rows = page.tasks.map((t) => h("tr", { "data-task": t.id },
        h("td", {}, h("a", { href: "#/task/" + encodeURIComponent(t.id) }, t.id)),
        h("td", {}, statusCell(t.status), workersNote(t.workers)),
        h("td", {}, t.pipeline),
        h("td", {}, t.strategy && t.strategy.version ? t.strategy.version : ""),
        h("td", {}, fmtTime(t.created)),
        h("td", {}, (t.tags || []).join(", ")),
        h("td", {}, t.rewards ? fmtNum(t.mean_reward, 2) + " (" + t.rewards + ")" : "")));
      const next = page.next_cursor ? h("a", { href: "#/?" + new URLSearchParams([...q.entries()].filter(([k]) => k !== "cursor").concat([["cursor", page.next_cursor]])).toString() }, "next page →") : null;
      body.replaceChildren(
        h("table", { id: "runs-table" },
          h("thead", {}, h("tr", {}, ["task", "status", "pipeline", "strategy", "created", "tags", "reward"].map((c) => h("th", {}, c)))),
          h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "no tasks")))),
        h("p", { class: "muted" }, "updates every 3 s ", next));
    } catch (err) {
      body.replaceChildren(errorBox(err));
    }
  };
  await load();
  refreshTimer = setInterval(load, 3000);
}

// ---- task ----------------------------------------------------------------

async function taskPage(id) {
  let d;
  try {
    d = await api("GET", "/tasks/" + encodeURIComponent(id));
  } catch (err) {
    show(h("h1", {}, "Task " + id), errorBox(err));
    return;
  }
  const t = d.task;
  const calls = {};
  for (const c of d.calls || []) calls[c.hash] = c;
  const humans = (d.calls || []).filter((c) => c.kind === "human");
  const summary = h("dl", { class: "kv card" },
    h("dt", {}, "status"), h("dd", {}, statusCell(t.status), workersNote(d.workers)),
    d.workers ? [h("dt", {}, "workers"), h("dd", { id: "workers-none" }, d.workers + ": no worker polls this run's task queue, so its status now is unknown and what Temporal records is shown (running since " + fmtTime(t.created) + "); answers, messages and cancels are refused until a worker runs")] : null,
    h("dt", {}, "pipeline"), h("dd", {}, t.pipeline),
    h("dt", {}, "strategy"), h("dd", {}, t.strategy ? (t.strategy.name || "") + " " + (t.strategy.version || "") : ""),
    h("dt", {}, "created"), h("dd", {}, fmtTime(t.created)),
    h("dt", {}, "tags"), h("dd", {}, (t.tags || []).join(", ")),
    h("dt", {}, "input"), h("dd", {}, h("pre", {}, prettyJSON(t.input))),
    t.waits && t.waits.length ? [h("dt", {}, "waiting for"), h("dd", {}, t.waits.map((w) => questionText(w.question) || w.name || w.kind).join("; "))] : null,
    t.incident ? [h("dt", {}, "incident"), h("dd", { id: "incident" }, incidentText(t.incident))] : null,
    t.cancelled ? [h("dt", {}, "cancelled"), h("dd", { id: "cancelled" }, "by " + t.cancelled.by + (t.cancelled.reason ? ": " + t.cancelled.reason : "") + " at " + fmtTime(t.cancelled.at))] : null);
  const execs = d.executions.map((ex) => waterfall(ex, calls, humans));
  show(h("h1", {}, "Task " + t.id), summary, operateSection(t), execs, rewardsSection(t.id, d));
}

function waterfall(ex, calls, humans) {
  const e = ex.execution;
  const spans = ex.spans || [];
  const t0 = Math.min(...spans.map((s) => Date.parse(s.start)).filter((x) => !isNaN(x)), Date.parse(e.started));
  const t1 = Math.max(...spans.map((s) => Date.parse(s.end)).filter((x) => !isNaN(x)), t0 + 1);
  const total = Math.max(t1 - t0, 1);
  const depth = {};
  const byId = {};
  for (const s of spans) byId[s.span_id] = s;
  const depthOf = (s) => {
    if (depth[s.span_id] !== undefined) return depth[s.span_id];
    const p = s.parent_span_id && byId[s.parent_span_id];
    depth[s.span_id] = 0;
    depth[s.span_id] = p ? depthOf(p) + 1 : 0;
    return depth[s.span_id];
  };
  let tokens = 0, cost = 0;
  const rows = [];
  for (const s of spans) {
    const start = Date.parse(s.start), end = Date.parse(s.end);
    const dur = isNaN(end) ? 0 : end - start;
    const inTok = attr(s, "gen_ai.usage.input_tokens"), outTok = attr(s, "gen_ai.usage.output_tokens");
    const c = attr(s, "sextant.cost_usd");
    if (inTok !== undefined) { tokens += (inTok || 0) + (outTok || 0); cost += c || 0; }
    const bar = h("div", { class: "span-bar" + (s.status && s.status.code === "error" ? " error" : s.kind === "client" ? " client" : "") });
    bar.style.left = ((start - t0) / total * 100).toFixed(2) + "%";
    bar.style.width = Math.max(dur / total * 100, 0.3).toFixed(2) + "%";
    const name = h("div", { class: "span-name" }, "\u00a0".repeat(depthOf(s) * 3) + s.name);
    const meta = [fmtMs(dur)];
    if (inTok !== undefined) meta.push((inTok || 0) + "/" + (outTok || 0) + " tok");
    if (c) meta.push("$" + fmtNum(c, 4));
    const row = h("div", { class: "span-row", "data-span": s.span_id, title: s.span_id }, name, h("div", { class: "span-track" }, bar), h("div", { class: "span-meta" }, meta.join(" · ")));
    const detail = spanDetail(s, calls, humans);
    detail.hidden = !(detail.dataset.call === "1");
    row.addEventListener("click", () => { detail.hidden = !detail.hidden; });
    rows.push(row, detail);
  }
  return h("section", { class: "execution" },
    h("h2", {}, "Execution " + e.id + " ", h("span", { class: "muted" }, (e.mode || "live") + " · "), statusCell(e.status),
      h("span", { class: "muted" }, " · " + (e.ended ? fmtMs(Date.parse(e.ended) - Date.parse(e.started)) : "not ended") + " · " + tokens + " tokens · $" + fmtNum(cost, 4))),
    e.error ? h("div", { class: "error-box" }, e.error) : null,
    h("div", { class: "waterfall" }, rows.length ? rows : h("p", { class: "muted" }, "no spans")));
}

function spanDetail(s, calls, humans) {
  const parts = [];
  const rec = attr(s, "sextant.recording");
  const c = rec && calls[rec];
  if (c && c.kind === "chat") {
    const req = c.request || {};
    // A message or reply that calls tools shows its calls under its text.
    const withCalls = (text, calls) => [text || "", ...(calls || []).map((tc) => "→ " + tc.name + "(" + JSON.stringify(tc.arguments) + ")")].filter(Boolean).join("\n");
    for (const m of req.messages || []) parts.push(h("div", { class: "prompt" }, h("strong", {}, m.role), h("pre", {}, withCalls(m.content, m.tool_calls))));
    const resp = c.response || {};
    parts.push(h("div", { class: "response" }, h("strong", {}, "reply"), h("pre", {}, resp.text !== undefined || resp.tool_calls ? withCalls(resp.text, resp.tool_calls) : prettyJSON(resp))));
    if (c.latency_ns) parts.push(h("p", { class: "muted" }, "recorded latency " + fmtMs(c.latency_ns / 1e6)));
  }
  const tool = attr(s, "gen_ai.operation.name") === "execute_tool";
  if (tool) parts.push(...toolDetail(s, c && c.kind === "tool" ? c : null));
  if (attr(s, "sextant.step.kind") === "human") {
    for (const hc of humans) {
      const q = hc.request || {};
      if (q.step === attr(s, "sextant.node") || q.Step === attr(s, "sextant.node")) {
        parts.push(h("div", {}, h("strong", {}, "asked"), h("pre", {}, q.prompt || q.Prompt || "")), h("div", {}, h("strong", {}, "answer"), h("pre", {}, prettyJSON(hc.response))));
      }
    }
  }
  const attrs = Object.entries(s.attributes || {}).map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, prettyJSON(v))));
  parts.push(h("details", {}, h("summary", {}, "attributes (" + attrs.length + ")"), h("table", {}, h("tbody", {}, attrs))));
  if (s.status && s.status.message && !tool) parts.push(h("div", { class: "error-box" }, s.status.message));
  const el = h("div", { class: "span-detail" }, parts);
  if (c || tool) el.dataset.call = "1";
  return el;
}

// toolDetail shows a tool call: from its recording when it has one (the
// arguments and result whole), else from its span (a call refused,
// blocked or declined before any tool ran).
function toolDetail(s, c) {
  const req = c ? c.request || {} : {};
  const resp = c ? c.response || {} : null;
  const source = c ? req.source : attr(s, "sextant.tool.source");
  const name = c ? req.tool : attr(s, "gen_ai.tool.name");
  const decision = attr(s, "sextant.tool.decision") || "";
  let args = c ? req.arguments : attr(s, "gen_ai.tool.call.arguments");
  if (typeof args === "string") { try { args = JSON.parse(args); } catch (e) { /* shown as written */ } }
  const failed = resp ? !!resp.is_error : !!(s.status && s.status.code === "error");
  const text = resp ? (resp.content || prettyJSON(resp.structured)) : attr(s, "gen_ai.tool.call.result") || "";
  const label = decision === "blocked" ? "blocked by policy" : decision === "declined" ? "declined" : failed ? "error" : "result";
  const parts = [
    h("div", { class: "tool-call" }, h("strong", {}, "tool call"), " ", h("code", {}, (source ? source + "." : "") + (name || "")), h("span", { class: "muted" }, " · " + decision)),
    h("div", { class: "tool-arguments" }, h("strong", {}, "arguments"), h("pre", {}, prettyJSON(args))),
    h("div", { class: failed ? "tool-error" : "tool-result" }, h("strong", {}, label), h("pre", {}, text)),
  ];
  if (resp && resp.content && resp.structured !== undefined) parts.push(h("div", { class: "tool-structured" }, h("strong", {}, "structured"), h("pre", {}, prettyJSON(resp.structured))));
  if (c && c.latency_ns) parts.push(h("p", { class: "muted" }, "recorded latency " + fmtMs(c.latency_ns / 1e6)));
  return parts;
}

function rewardsSection(id, d) {
  const spans = [];
  for (const ex of d.executions) for (const s of ex.spans || []) spans.push(s);
  const list = h("table", { id: "rewards-table" },
    h("thead", {}, h("tr", {}, ["#", "value", "span", "tags", "note", "created"].map((c) => h("th", {}, c)))),
    h("tbody", {}, (d.rewards || []).map((r) => h("tr", {}, h("td", {}, r.seq), h("td", {}, r.value), h("td", {}, r.span_id || ""), h("td", {}, (r.tags || []).join(", ")), h("td", {}, r.note || ""), h("td", {}, fmtTime(r.created))))));
  const msg = h("div", { id: "reward-message" });
  const form = h("form", { class: "inline", id: "reward-form" },
    h("label", {}, "reward (-1 … 1)", h("input", { name: "value", type: "number", step: "0.1", min: "-1", max: "1", required: true })),
    h("label", {}, "span", h("select", { name: "span_id" }, h("option", { value: "" }, "the task"), spans.map((s) => h("option", { value: s.span_id }, s.name + " (" + s.span_id + ")")))),
    h("label", {}, "tags (comma-separated)", h("input", { name: "tags" })),
    h("label", {}, "note", h("input", { name: "note" })),
    h("button", { type: "submit" }, "Add reward"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const body = { value: Number(f.get("value")) };
    if (f.get("span_id")) body.span_id = f.get("span_id");
    const tags = String(f.get("tags") || "").split(",").map((x) => x.trim()).filter(Boolean);
    if (tags.length) body.tags = tags;
    if (f.get("note")) body.note = f.get("note");
    try {
      const r = await api("POST", "/tasks/" + encodeURIComponent(id) + "/rewards", body);
      await taskPage(id);
      document.getElementById("reward-message").replaceChildren(h("div", { class: "notice" }, "reward #" + r.seq + " added"));
    } catch (err) {
      msg.replaceChildren(errorBox(err));
    }
  });
  return h("section", {}, h("h2", {}, "Rewards"), list, h("div", { class: "card" }, form, msg));
}

// ---- operating a task -------------------------------------------------------
//
// What sextant resume, cancel and retry do, from the task's page: answer
// a waiting person's step (a form built from the question and options the
// run recorded), cancel the task, retry an incident with variables set.

// operator is who acts, as the reviews page asks it; without it the
// server records the API client.
function operator() {
  return localStorage.getItem("sextant-reviewer") || undefined;
}

// questionText is a recorded question without the CLI's hint.
function questionText(q) {
  return (q || "").replace(/ — resume with --set answer=…$/, "");
}

function incidentText(inc) {
  return inc.kind + " at " + (inc.position ? inc.position + " " : "") + inc.node + ": " + inc.error;
}

// parseVars reads NAME=VALUE lines as sextant retry --set does: JSON when
// it parses, else a string; a value that starts like JSON must be JSON.
function parseVars(text) {
  const vars = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const i = line.indexOf("=");
    if (i <= 0) throw new Error(JSON.stringify(line) + ": want NAME=VALUE");
    const name = line.slice(0, i).trim(), value = line.slice(i + 1).trim();
    try {
      vars[name] = JSON.parse(value);
    } catch (e) {
      if (/^[{["]/.test(value)) throw new Error(name + ": not valid JSON: " + e.message);
      vars[name] = value;
    }
  }
  return vars;
}

function operateSection(t) {
  const msg = h("div", { id: "operate-message" });
  // act posts an operator's change, then shows the task as it is now.
  const act = async (path, body, what) => {
    msg.replaceChildren();
    try {
      const r = await api("POST", "/tasks/" + encodeURIComponent(t.id) + path, body);
      await taskPage(t.id);
      document.getElementById("operate-message").replaceChildren(h("div", { class: "notice" }, what + ": task " + r.task + " " + r.status + (r.error ? " (" + r.error + ")" : "")));
    } catch (err) {
      msg.replaceChildren(errorBox(err));
    }
  };
  const forms = [];
  for (const w of t.waits || []) {
    if (w.kind !== "human") continue;
    const opts = w.options || [];
    const choice = opts.length
      ? h("div", { class: "choices" }, opts.map((o, i) => h("label", { class: "choice" }, h("input", { type: "radio", name: "answer", value: o, required: i === 0 }), o)))
      : h("label", {}, "answer", h("input", { name: "answer", required: true }));
    const form = h("form", { class: "inline answer-form", "data-node": w.node },
      h("div", { class: "question" }, h("strong", {}, w.node), " asks: ", questionText(w.question)), choice,
      h("button", { type: "submit" }, "Answer"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const answer = new FormData(form).get("answer");
      act("/resume", { answers: { answer: answer } }, "answered " + w.node);
    });
    forms.push(form);
  }
  if (t.status === "incident") {
    const form = h("form", { id: "retry-form", class: "inline" },
      h("label", {}, "variables to set, one NAME=VALUE a line (JSON when it parses)", h("textarea", { name: "vars", rows: 3, cols: 50, placeholder: "approved=true" })),
      h("button", { type: "submit" }, "Retry"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      let vars;
      try { vars = parseVars(new FormData(form).get("vars")); } catch (err) { msg.replaceChildren(errorBox(err)); return; }
      act("/retry", { vars: vars }, "retried");
    });
    forms.push(form);
  }
  if (["running", "waiting", "incident", "interrupted"].includes(t.status)) {
    const form = h("form", { id: "cancel-form", class: "inline" },
      h("label", {}, "reason", h("input", { name: "reason", placeholder: "why (recorded with the task)" })),
      h("button", { type: "submit", class: "danger" }, "Cancel task"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      act("/cancel", { by: operator(), reason: new FormData(form).get("reason") || undefined }, "cancelled");
    });
    forms.push(form);
  }
  if (!forms.length) return h("section", { id: "operate" }, msg);
  return h("section", { id: "operate" }, h("h2", {}, "Operate"), h("div", { class: "card" }, forms, msg));
}

// ---- comparisons -----------------------------------------------------------

async function comparisonsPage() {
  let data;
  try { data = await api("GET", "/comparisons"); } catch (err) { show(h("h1", {}, "Comparisons"), errorBox(err)); return; }
  const rows = data.comparisons.map((v) => h("tr", {},
    h("td", {}, h("a", { href: "#/comparison/" + encodeURIComponent(v.id) }, fmtTime(v.created))),
    h("td", {}, v.command), h("td", {}, v.pipeline),
    h("td", {}, v.comparison.baseline.version + " → " + v.comparison.candidate.version),
    h("td", {}, h("span", { class: "ruling-" + v.ruling }, v.ruling)),
    h("td", {}, v.comparison.regressed + " regressed, " + v.comparison.improved + " improved")));
  show(h("h1", {}, "Comparisons"), h("table", { id: "comparisons-table" },
    h("thead", {}, h("tr", {}, ["when", "command", "pipeline", "strategies", "ruling", "flips"].map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "no judged replays yet (sextant gate records one)")))));
}

// svgOf makes a node of an <svg> element the server drew
// (report.ForestSVG, the HTML report's plot, every text escaped): parsed
// as an inert document, where nothing runs, and kept only as far as its
// known drawing elements and attributes go.
const svgTags = new Set(["svg", "g", "title", "text", "line", "circle", "rect"]);
function svgOf(markup) {
  if (!markup) return null;
  const el = new DOMParser().parseFromString(markup, "text/html").body.firstElementChild;
  if (!el || el.localName !== "svg") return null;
  for (const n of [el, ...el.querySelectorAll("*")]) {
    if (!svgTags.has(n.localName)) { n.remove(); continue; }
    for (const a of [...n.attributes]) if (a.name.startsWith("on") || a.name.includes("href") || a.name === "style") n.removeAttribute(a.name);
  }
  return document.adoptNode(el);
}

// ---- comparison matrix ------------------------------------------------------

const matrixFilters = [["all", "all"], ["regressed", "regressed"], ["improved", "improved"], ["differs", "different output"], ["error", "errors"]];

// taskKinds are the filters a task of a comparison belongs to.
function taskKinds(t) {
  const k = [];
  if (t.baseline.success && !t.candidate.success) k.push("regressed");
  else if (!t.baseline.success && t.candidate.success) k.push("improved");
  if (t.output_differs) k.push("differs");
  if ((t.baseline_run || {}).error || (t.candidate_run || {}).error) k.push("error");
  return k;
}

function matrixCells(r, run) {
  const result = run && run.error ? "error" : r.success ? "pass" : "fail";
  return [
    h("td", { class: "ruling-" + (r.success ? "pass" : "fail"), title: run && run.error ? run.error : null }, result),
    h("td", { class: "num" }, fmtNum(r.reward, 2)),
    h("td", { class: "num" }, "$" + fmtNum(r.cost_usd, 4)),
    h("td", { class: "num" }, run ? fmtMs(run.latency_ms || 0) : "-")];
}

// matrixSection is every task of a comparison, baseline beside
// candidate, with filters; the table's data-filter says which is applied.
function matrixSection(v) {
  const c = v.comparison;
  const rows = (v.tasks || []).map((t) => h("tr", { "data-task": t.task, "data-kinds": taskKinds(t).join(" ") },
    h("td", {}, h("a", { href: "#/task/" + encodeURIComponent(t.task) }, t.task)),
    matrixCells(t.baseline, t.baseline_run), matrixCells(t.candidate, t.candidate_run),
    h("td", {}, t.output_differs ? "differs" : t.baseline_run ? "same" : "-")));
  const has = (row, k) => k === "all" || row.dataset.kinds.split(" ").includes(k);
  const table = h("table", { id: "matrix", class: "matrix", "data-filter": "all" },
    h("thead", {},
      h("tr", {}, h("th", { rowspan: 2 }, "task"), h("th", { colspan: 4 }, "baseline " + c.baseline.version), h("th", { colspan: 4 }, "candidate " + c.candidate.version), h("th", { rowspan: 2 }, "output")),
      h("tr", {}, ["result", "score", "cost", "latency", "result", "score", "cost", "latency"].map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 10, class: "muted" }, "no tasks kept"))));
  const buttons = matrixFilters.map(([k, label]) => h("button", { type: "button", class: "secondary", "data-filter": k, "aria-pressed": String(k === "all"), onclick: () => apply(k) },
    label + " (" + rows.filter((r) => has(r, k)).length + ")"));
  function apply(k) {
    for (const r of rows) r.hidden = !has(r, k);
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.filter === k));
    table.dataset.filter = k;
  }
  return h("section", { id: "matrix-section" }, h("h2", {}, "Tasks (" + rows.length + ")"),
    h("div", { class: "matrix-filters", role: "group", "aria-label": "show tasks" }, buttons), table);
}

// callOutcome is what came of a tool call, as the reports say it.
function callOutcome(x) {
  if (x.decision === "blocked") {
    const why = (x.error || "").replace(/^error: blocked by policy: /, "");
    const call = (x.source ? x.source + "." : "") + x.tool + "(" + x.arguments + ") ";
    return "blocked by policy" + (why && why !== x.error ? ": " + (why.startsWith(call) ? why.slice(call.length) : why) : "");
  }
  if (x.decision === "declined") return "declined by a person";
  return x.error || x.result || "";
}

// flipCalls puts a flipped task's tool calls side by side: the i-th call
// of the baseline beside the i-th of the candidate.
function flipCalls(t, c) {
  const b = t.baseline_tool_calls || [], k = t.candidate_tool_calls || [];
  if (!b.length && !k.length) return null;
  const cell = (x) => x
    ? h("td", { class: "call-" + (x.decision === "blocked" || x.decision === "declined" ? "blocked" : x.error ? "error" : "ok") },
      h("code", {}, (x.source ? x.source + "." : "") + x.tool + "(" + x.arguments + ")"), h("div", { class: "outcome" }, callOutcome(x)))
    : h("td", { class: "muted" }, "-");
  const rows = [];
  for (let i = 0; i < Math.max(b.length, k.length); i++) rows.push(h("tr", {}, h("td", {}, i + 1), cell(b[i]), cell(k[i])));
  return h("table", { class: "tool-calls" },
    h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "baseline " + c.baseline.version + " tool calls"), h("th", {}, "candidate " + c.candidate.version + " tool calls"))),
    h("tbody", {}, rows));
}

async function comparisonPage(id) {
  let v;
  try { v = await api("GET", "/comparisons/" + encodeURIComponent(id)); } catch (err) { show(h("h1", {}, "Comparison"), errorBox(err)); return; }
  const c = v.comparison;
  const diff = c.diff || {};
  const diffList = h("ul", { id: "strategy-diff" },
    (diff.parameters || []).map((p) => h("li", {}, p.name + ": " + p.from + " → " + p.to)),
    (diff.constraints || []).map((x) => h("li", {}, x)),
    (diff.playbook || []).map((p) => h("li", {}, p.op + " " + p.id + (p.content ? ": " + p.content : ""))));
  const gates = h("table", {}, h("thead", {}, h("tr", {}, ["gate", "ruling", "reasons"].map((x) => h("th", {}, x)))),
    h("tbody", {}, ((v.gates && v.gates.gates) || []).map((g) => h("tr", {}, h("td", {}, g.name), h("td", {}, h("span", { class: "ruling-" + g.ruling }, g.ruling)), h("td", {}, (g.reasons || []).join("; "))))));
  const flipped = (v.tasks || []).filter((t) => t.flip);
  const flips = flipped.map((t) => h("div", { class: "card flipped", "data-task": t.task },
    h("div", {}, h("a", { href: "#/task/" + encodeURIComponent(t.task) }, t.task), " ", h("span", { class: "flip-" + t.flip }, t.flip)),
    h("div", { class: "side-by-side" },
      h("div", { class: "baseline-output" }, h("strong", {}, "baseline " + c.baseline.version + (t.baseline.success ? " (pass)" : " (fail)")), h("pre", {}, prettyJSON(t.baseline_output) || "(output not kept)")),
      h("div", { class: "candidate-output" }, h("strong", {}, "candidate " + c.candidate.version + (t.candidate.success ? " (pass)" : " (fail)")), h("pre", {}, prettyJSON(t.candidate_output) || "(output not kept)"))),
    flipCalls(t, c)));
  show(h("h1", {}, "Comparison " + c.baseline.name + " " + c.baseline.version + " → " + c.candidate.version),
    h("dl", { class: "kv card" },
      h("dt", {}, "pipeline"), h("dd", {}, v.pipeline),
      h("dt", {}, "ruling"), h("dd", {}, h("span", { class: "ruling-" + v.ruling }, v.ruling + " (exit " + v.exit_code + ")")),
      h("dt", {}, "tasks"), h("dd", {}, v.replayed + " replayed, fidelity " + fmtNum(c.fidelity * 100, 1) + "%")),
    h("h2", {}, "Effects (candidate − baseline, with confidence intervals)"), h("div", { class: "card" }, svgOf(v.forest_svg) || h("p", { class: "muted" }, "no metrics")),
    h("h2", {}, "Gates"), (v.gates && v.gates.gates && v.gates.gates.length) ? gates : h("p", { class: "muted" }, "no gates in the chain"),
    h("h2", {}, "Strategy diff"), h("div", { class: "card" }, diffList),
    matrixSection(v),
    h("h2", {}, "Flipped tasks (" + flipped.length + ")"), flips.length ? flips : h("p", { class: "muted" }, "none"));
}

// ---- strategies ------------------------------------------------------------

async function strategiesPage() {
  let data, pipes;
  try {
    [data, pipes] = await Promise.all([api("GET", "/strategies"), api("GET", "/pipelines")]);
  } catch (err) { show(h("h1", {}, "Strategies"), errorBox(err)); return; }
  show(h("h1", {}, "Strategies"),
    await liveSection(pipes.pipelines),
    h("h2", {}, "Recorded versions"),
    h("table", {}, h("thead", {}, h("tr", {}, ["strategy", "versions", "latest"].map((x) => h("th", {}, x)))),
      h("tbody", {}, data.strategies.length ? data.strategies.map((s) => h("tr", {}, h("td", {}, h("a", { href: "#/strategy/" + encodeURIComponent(s.name) }, s.name)), h("td", {}, s.versions), h("td", {}, s.latest)))
        : h("tr", {}, h("td", { colspan: 3, class: "muted" }, "no promoted versions yet")))));
}

// liveSection shows each served pipeline's live strategy version, with
// promote (to a recorded version) and roll back, as sextant strategy
// promote and rollback do; each move names the live version it saw, so a
// move made meanwhile by someone else is refused, not overwritten.
async function liveSection(pipelines) {
  const msg = h("div", { id: "live-message" });
  const move = (name, verb, body) => async () => {
    msg.replaceChildren();
    try {
      const l = await api("POST", "/pipelines/" + encodeURIComponent(name) + "/" + verb, Object.assign({ by: operator() }, body));
      await strategiesPage();
      document.getElementById("live-message").replaceChildren(h("div", { class: "notice" }, name + ": " + l.live.name + " " + l.live.version + " is live (" + l.live.action + ")"));
    } catch (err) { msg.replaceChildren(errorBox(err)); }
  };
  const rows = await Promise.all(pipelines.map(async (p) => {
    let l;
    try { l = await api("GET", "/pipelines/" + encodeURIComponent(p.name) + "/live"); } catch (err) {
      return h("tr", { "data-pipeline": p.name }, h("td", {}, p.name), h("td", { colspan: 3, class: "muted" }, err.message));
    }
    const versions = [l.configured.version];
    try {
      const log = await api("GET", "/strategies/" + encodeURIComponent(l.configured.name));
      for (const v of log.versions) if (!versions.includes(v.version)) versions.push(v.version);
    } catch (err) { /* no recorded versions: the configured one only */ }
    const pick = h("select", { class: "version", "aria-label": "version to promote" }, versions.map((v) => h("option", { value: v, selected: v === l.live.version }, v)));
    const lv = l.live;
    return h("tr", { "data-pipeline": p.name },
      h("td", {}, p.name),
      h("td", { class: "live-version" }, h("strong", {}, lv.name + " " + lv.version), " ", h("span", { class: "muted" }, lv.action + (lv.by ? " by " + lv.by : "") + (lv.at ? " " + fmtTime(lv.at) : ""))),
      h("td", {}, l.pinned ? "pinned to " + l.runs.version : l.runs.version),
      h("td", {}, pick, " ",
        h("button", { type: "button", class: "promote", onclick: () => move(p.name, "promote", { version: pick.value, expect: lv.version })() }, "Promote"), " ",
        h("button", { type: "button", class: "secondary rollback", disabled: (l.history || []).length < 1, onclick: move(p.name, "rollback", { expect: lv.version }) }, "Roll back")));
  }));
  return h("section", { id: "live" }, h("h2", {}, "Live versions"),
    h("table", { id: "live-table" }, h("thead", {}, h("tr", {}, ["pipeline", "live", "runs use", "move"].map((x) => h("th", {}, x)))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 4, class: "muted" }, "the server runs no pipelines (--pipelines)")))), msg);
}

async function strategyPage(name) {
  let data;
  try { data = await api("GET", "/strategies/" + encodeURIComponent(name)); } catch (err) { show(h("h1", {}, name), errorBox(err)); return; }
  const out = h("div", { id: "strategy-diff-text" });
  const items = data.versions.map((v) => h("li", {},
    h("strong", {}, v.version), v.parent ? " ← " + v.parent + " " : " ", h("span", { class: "muted" }, fmtTime(v.created) + " by " + (v.author || "?")), " ",
    v.parent ? h("button", { class: "secondary", type: "button", onclick: async () => {
      try {
        const d = await api("GET", "/strategies/" + encodeURIComponent(name) + "/diff?from=" + encodeURIComponent(v.parent) + "&to=" + encodeURIComponent(v.version));
        out.replaceChildren(h("h2", {}, v.parent + " → " + v.version), h("pre", {}, d.text || "(no change)"));
      } catch (err) { out.replaceChildren(errorBox(err)); }
    } }, "diff") : null));
  show(h("h1", {}, "Strategy " + name), h("h2", {}, "Lineage"), h("ul", { class: "lineage" }, items), out);
}

// ---- reviews ---------------------------------------------------------------

async function reviewsPage(params) {
  const status = params.get("status") || "pending";
  let data;
  try { data = await api("GET", "/reviews?status=" + encodeURIComponent(status)); } catch (err) { show(h("h1", {}, "Reviews"), errorBox(err)); return; }
  const by = h("input", { id: "reviewer", placeholder: "your name", value: localStorage.getItem("sextant-reviewer") || "" });
  const msg = h("div", { id: "review-message" });
  const decide = (id, verb) => async () => {
    if (!by.value.trim()) { msg.replaceChildren(errorBox(new Error("say who decides (your name)"))); return; }
    localStorage.setItem("sextant-reviewer", by.value.trim());
    try {
      const r = await api("POST", "/reviews/" + encodeURIComponent(id) + "/" + verb, { by: by.value.trim() });
      await reviewsPage(params);
      document.getElementById("review-message").replaceChildren(h("div", { class: "notice" }, "review " + r.id + " " + r.status + (r.path ? " → " + r.path : "")));
    } catch (err) { msg.replaceChildren(errorBox(err)); }
  };
  const rows = data.reviews.map((r) => {
    const c = r.comparison || {};
    return h("div", { class: "card review", "data-review": r.id },
      h("div", {}, h("strong", {}, r.id), " ", h("span", { class: "muted" }, r.pipeline + " · " + (r.mutator || "") + " · " + fmtTime(r.created)), " ", h("span", { class: "status-" + (r.status === "approved" ? "completed" : r.status === "rejected" ? "failed" : "waiting") }, r.status)),
      h("p", {}, (c.baseline ? c.baseline.version : "") + " → " + (c.candidate ? c.candidate.version : "") + ": " + (c.regressed || 0) + " regressed, " + (c.improved || 0) + " improved"),
      h("ul", {}, ((c.diff && c.diff.parameters) || []).map((p) => h("li", {}, p.name + ": " + p.from + " → " + p.to))),
      svgOf(r.forest_svg),
      r.status === "pending" ? h("div", {}, h("button", { type: "button", class: "approve", onclick: decide(r.id, "approve") }, "Approve"), " ", h("button", { type: "button", class: "danger reject", onclick: decide(r.id, "reject") }, "Reject")) : null);
  });
  show(h("h1", {}, "Review queue"),
    h("p", {}, h("a", { href: "#/reviews?status=pending" }, "pending"), " · ", h("a", { href: "#/reviews?status=all" }, "all")),
    h("form", { class: "inline" }, h("label", {}, "reviewer", by)), msg,
    rows.length ? rows : h("p", { class: "muted" }, "nothing waits for review"));
}

// ---- metrics ---------------------------------------------------------------

function lineChart(points, label) {
  const W = 520, H = 140, pad = 30;
  const g = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": label });
  if (!points.length) return g;
  const ys = points.map((p) => p.y);
  const lo = Math.min(0, ...ys), hi = Math.max(...ys, lo + 1e-9);
  const x = (i) => pad + (points.length === 1 ? (W - 2 * pad) / 2 : i / (points.length - 1) * (W - 2 * pad));
  const y = (v) => H - pad - (v - lo) / (hi - lo) * (H - 2 * pad);
  g.append(svg("line", { x1: pad, x2: W - pad, y1: H - pad, y2: H - pad, class: "axis" }));
  g.append(svg("polyline", { points: points.map((p, i) => x(i) + "," + y(p.y)).join(" "), class: "line" }));
  points.forEach((p, i) => g.append(svg("circle", { cx: x(i), cy: y(p.y), r: 3, class: "pt-same" }), svg("text", { x: x(i) - 20, y: H - 10 }, p.x.slice(5))));
  g.append(svg("text", { x: 4, y: 14 }, label + " (max " + fmtNum(hi, 3) + ")"));
  return g;
}

async function metricsPage() {
  let data;
  try { data = await api("GET", "/metrics"); } catch (err) { show(h("h1", {}, "Metrics"), errorBox(err)); return; }
  const groups = {};
  for (const m of data.metrics) (groups[m.pipeline + " " + (m.strategy || "")] ||= []).push(m);
  const charts = Object.entries(groups).map(([k, ms]) => h("div", { class: "card" }, h("h2", {}, k),
    lineChart(ms.map((m) => ({ x: m.day, y: m.success_rate })), "success rate"),
    lineChart(ms.map((m) => ({ x: m.day, y: m.mean_reward })), "mean reward"),
    lineChart(ms.map((m) => ({ x: m.day, y: m.cost_usd })), "cost $"),
    lineChart(ms.map((m) => ({ x: m.day, y: m.mean_latency_ms })), "latency ms")));
  const table = h("table", { id: "metrics-table" }, h("thead", {}, h("tr", {}, ["day", "pipeline", "strategy", "tasks", "success", "mean reward", "tokens", "cost", "latency"].map((x) => h("th", {}, x)))),
    h("tbody", {}, data.metrics.map((m) => h("tr", {}, h("td", {}, m.day), h("td", {}, m.pipeline), h("td", {}, m.strategy || ""), h("td", {}, m.tasks),
      h("td", {}, fmtNum(m.success_rate * 100, 0) + "%"), h("td", {}, m.rewarded ? fmtNum(m.mean_reward, 2) : ""), h("td", {}, m.tokens), h("td", {}, "$" + fmtNum(m.cost_usd, 4)), h("td", {}, fmtMs(m.mean_latency_ms))))));
  show(h("h1", {}, "Metrics over time"), table, charts);
}

// ---- router ----------------------------------------------------------------

async function route() {
  if (refreshTimer) { clearInterval(refreshTimer); refreshTimer = null; }
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const section = parts[0] || "runs";
  for (const a of document.querySelectorAll("nav a")) {
    const nav = a.dataset.nav;
    a.classList.toggle("active", nav === section || (nav === "runs" && section === "task") || (nav === "comparisons" && section === "comparison") || (nav === "strategies" && section === "strategy"));
  }
  switch (section) {
    case "task": return taskPage(parts[1]);
    case "comparisons": return comparisonsPage();
    case "comparison": return comparisonPage(parts[1]);
    case "strategies": return strategiesPage();
    case "strategy": return strategyPage(parts[1]);
    case "reviews": return reviewsPage(params);
    case "metrics": return metricsPage();
    default: return runsPage(params);
  }
}

window.addEventListener("hashchange", route);
route();
