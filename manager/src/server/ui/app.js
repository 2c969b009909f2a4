// The hetpilot dashboard: reads the authenticated /v1 API with the token kept in this
// tab's sessionStorage and draws tables and SVG charts. Everything shown is built with
// DOM calls and textContent (no innerHTML), so no name a user submitted can run as code.
// Elements carrying a number the API gives have a `data-k` key the browser test reads.
'use strict';

const TOKEN_KEY = 'hetpilot-token';
const REFRESH_MS = 2000;
const HISTORY = 300; // samples kept for the charts (10 minutes at 2 s)
const COLORS = ['#2e62d9', '#e8590c', '#2f9e44', '#ae3ec9', '#f08c00', '#0c8599',
  '#c2255c', '#5c940d', '#1864ab', '#862e9c'];

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  who: null,
  timer: null,
  busy: false,
  done: new Map(), // app id -> {t, done} of the previous sample
  throughput: [], // [{t, rates: Map(app id -> tasks/s)}]
  fairness: [], // [{t, f}]
  names: new Map(), // app id -> name
};

// ---- DOM helpers ---------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'style') setStyle(el, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Styles through the CSSOM: the Content-Security-Policy refuses style attributes.
function setStyle(el, text) {
  for (const decl of text.split(';')) {
    const i = decl.indexOf(':');
    if (i > 0) el.style.setProperty(decl.slice(0, i).trim(), decl.slice(i + 1).trim());
  }
}

function s(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function num(value, key, digits) {
  const text = typeof value === 'number' && digits !== undefined ? value.toFixed(digits) : String(value);
  return h('td', { class: 'num', 'data-k': key }, text);
}

function table(headers, rows, attrs) {
  return h('table', attrs || {},
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows));
}

function card(label, value, key) {
  return h('div', { class: 'card' }, h('div', { class: 'v', 'data-k': key }, String(value)),
    h('div', { class: 'k' }, label));
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return (i === 0 ? v : v.toFixed(1)) + ' ' + units[i];
}

function ago(ms) {
  if (!ms) return '-';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 120) return s + ' s ago';
  if (s < 7200) return Math.round(s / 60) + ' min ago';
  return Math.round(s / 3600) + ' h ago';
}

function color(i) { return COLORS[i % COLORS.length]; }

// ---- API -------------------------------------------------------------------------

class Unauthorized extends Error {}

async function api(path) {
  const r = await fetch('/v1' + path, {
    headers: { Authorization: 'Bearer ' + state.token },
    cache: 'no-store',
  });
  const body = await r.json().catch(() => ({}));
  // Refusals carry a code (docs/guide/api.md, "Error answers"); the status covers a
  // manager that sends none.
  if (body.code === 'unauthorized' || r.status === 401) {
    throw new Unauthorized('the token was refused');
  }
  if (!r.ok) throw new Error(body.code ? `${body.error} (${body.code})` : (body.error || r.statusText));
  return body;
}

// Every row of a paged listing (`/apps`, `/agents`, ...): pages of at most 1000 rows, each
// going on after the cursor `cursorOf` gives the last row of the page before.
async function apiAll(path, cursorOf) {
  const rows = [];
  let after = null;
  for (;;) {
    const q = '?limit=1000' + (after === null ? '' : '&after=' + encodeURIComponent(after));
    const page = await api(path + q);
    rows.push(...page);
    if (page.length < 1000) return rows;
    after = cursorOf(page[page.length - 1]);
  }
}

// ---- charts ----------------------------------------------------------------------

// A line chart of `series` ([{name, color, points: [[t, v]]}]) over time.
function lineChart(series, opts) {
  const w = opts.width || 640;
  const ht = opts.height || 200;
  const pad = { l: 48, r: 10, t: 10, b: 22 };
  const all = series.flatMap((x) => x.points);
  const svg = s('svg', { class: 'chart', width: w, height: ht, viewBox: `0 0 ${w} ${ht}`, role: 'img',
    'aria-label': opts.label });
  if (all.length < 2) {
    svg.append(s('text', { x: pad.l, y: ht / 2 }, 'collecting samples...'));
    return svg;
  }
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]));
  const vmax = opts.max !== undefined ? opts.max : Math.max(opts.floor || 1e-9, ...all.map((p) => p[1]));
  const x = (t) => pad.l + ((t - t0) / Math.max(1, t1 - t0)) * (w - pad.l - pad.r);
  const y = (v) => ht - pad.b - (v / vmax) * (ht - pad.t - pad.b);
  for (const f of [0, 0.5, 1]) {
    const v = vmax * f;
    svg.append(s('line', { x1: pad.l, x2: w - pad.r, y1: y(v), y2: y(v), stroke: '#eaecf0' }));
    svg.append(s('text', { x: 4, y: y(v) + 4 }, v >= 100 ? v.toFixed(0) : v.toPrecision(2)));
  }
  svg.append(s('text', { x: pad.l, y: ht - 6 }, new Date(t0).toLocaleTimeString()));
  svg.append(s('text', { x: w - pad.r - 60, y: ht - 6 }, new Date(t1).toLocaleTimeString()));
  for (const line of series) {
    if (line.points.length < 1) continue;
    const d = line.points.map((p, i) => (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ',' + y(p[1]).toFixed(1)).join('');
    svg.append(s('path', { d, fill: 'none', stroke: line.color, 'stroke-width': 2 }, s('title', {}, line.name)));
  }
  return svg;
}

function legend(items) {
  return h('div', { class: 'legend' }, items.map((it) =>
    h('span', {}, h('i', { style: 'background:' + it.color }), it.name)));
}

// Horizontal stacked bars: one row per `rows[i]` ({label, parts: [{name, value, color}]}).
function stackedBars(rows, opts) {
  const w = opts.width || 640;
  const rowH = 26;
  const labelW = 140;
  const ht = rows.length * rowH + 10;
  const max = Math.max(1, ...rows.map((r) => r.total || r.parts.reduce((a, p) => a + p.value, 0)));
  const svg = s('svg', { class: 'chart', width: w, height: ht, viewBox: `0 0 ${w} ${ht}`, role: 'img',
    'aria-label': opts.label });
  rows.forEach((r, i) => {
    const y = 5 + i * rowH;
    svg.append(s('text', { x: 6, y: y + 15 }, r.label));
    let x = labelW;
    for (const p of r.parts) {
      const pw = (p.value / max) * (w - labelW - 60);
      if (pw > 0) {
        svg.append(s('rect', { x, y: y + 3, width: pw, height: rowH - 8, fill: p.color },
          s('title', {}, `${p.name}: ${p.value}`)));
      }
      x += pw;
    }
    const sum = r.parts.reduce((a, p) => a + p.value, 0);
    svg.append(s('text', { x: x + 6, y: y + 15 }, r.total ? `${sum} / ${r.total}` : String(sum)));
  });
  return svg;
}

// ---- live samples (kept across pages) ---------------------------------------------

function sampleApps(apps) {
  const now = Date.now();
  const rates = new Map();
  for (const a of apps) {
    state.names.set(a.app, a.name);
    const prev = state.done.get(a.app);
    const done = a.counts.done + a.counts.failed;
    if (prev && now > prev.t) rates.set(a.app, Math.max(0, (done - prev.done) * 1000 / (now - prev.t)));
    state.done.set(a.app, { t: now, done });
  }
  if (rates.size) state.throughput.push({ t: now, rates });
  if (state.throughput.length > HISTORY) state.throughput.shift();
}

function sampleFairness(f) {
  if (typeof f !== 'number') return;
  state.fairness.push({ t: Date.now(), f });
  if (state.fairness.length > HISTORY) state.fairness.shift();
}

// The manager's own samples from before the page was opened (GET /v1/history).
async function seedHistory() {
  let hist;
  try {
    hist = await api('/history');
  } catch (e) {
    return; // the charts start empty; refresh() reports what is wrong
  }
  const prev = new Map();
  for (const s of hist.samples) {
    if (typeof s.fairness === 'number') state.fairness.push({ t: s.at_ms, f: s.fairness });
    const rates = new Map();
    for (const a of s.apps) {
      const p = prev.get(a.app);
      if (p && s.at_ms > p.t) rates.set(a.app, Math.max(0, (a.ended - p.ended) * 1000 / (s.at_ms - p.t)));
      prev.set(a.app, { t: s.at_ms, ended: a.ended });
    }
    if (rates.size) state.throughput.push({ t: s.at_ms, rates });
  }
  state.fairness.splice(0, Math.max(0, state.fairness.length - HISTORY));
  state.throughput.splice(0, Math.max(0, state.throughput.length - HISTORY));
}

// ---- pages -----------------------------------------------------------------------

async function pageApps(apps) {
  const total = (k) => apps.reduce((a, x) => a + x.counts[k], 0);
  const lost = apps.reduce((a, x) => a + (x.lost_attempts || 0), 0);
  const out = [h('h2', {}, 'Applications'),
    h('div', { class: 'cards' },
      card('applications', apps.length, 'apps.count'),
      card('waiting', total('waiting'), 'apps.waiting'),
      card('leased (not started)', total('leased'), 'apps.leased'),
      card('running', total('running'), 'apps.running'),
      card('lost attempts', lost, 'apps.lost_attempts'),
      card('done', total('done'), 'apps.done'),
      card('failed', total('failed'), 'apps.failed'))];
  const shown = apps.slice(-8).map((a) => a.app);
  const series = shown.map((id, i) => ({
    name: `${id} ${state.names.get(id) || ''}`,
    color: color(i),
    points: state.throughput.filter((p) => p.rates.has(id)).map((p) => [p.t, p.rates.get(id)]),
  }));
  out.push(h('h2', {}, 'Throughput (tasks ended per second)'),
    lineChart(series, { label: 'throughput over time', floor: 1 }), legend(series));
  const rows = apps.slice().reverse().map((a) => {
    const c = a.counts;
    const all = c.waiting + c.leased + c.running + c.done + c.failed + c.cancelled;
    const ended = c.done + c.failed + c.cancelled;
    const pct = all ? (100 * ended) / all : 100;
    const k = (f) => `app.${a.app}.${f}`;
    return h('tr', { 'data-app': a.app },
      h('td', {}, a.app), h('td', {}, a.name), h('td', {}, a.owner),
      h('td', {}, h('span', { class: 'bar' }, h('span', { style: `width:${pct.toFixed(1)}%` })),
        ' ', h('span', { 'data-k': k('percent') }, pct.toFixed(1)), '%'),
      num(c.waiting, k('waiting')), num(c.leased, k('leased')), num(c.running, k('running')),
      num(c.done, k('done')), num(c.failed, k('failed')), num(c.cancelled, k('cancelled')),
      num(a.lost_attempts || 0, k('lost_attempts')),
      h('td', { class: 'muted' }, a.blocked || (a.cancelled ? 'cancelled' : '')));
  });
  out.push(h('h2', {}, 'Progress'),
    table(['app', 'name', 'owner', 'progress', 'waiting', 'leased', 'running', 'done', 'failed', 'cancelled',
      'lost attempts', 'note'],
      rows, { id: 'apps-table' }));
  out.push(...await workflowSection(apps));
  const failing = apps.filter((a) => a.counts.failed > 0).slice(-5);
  if (failing.length) {
    out.push(h('h2', {}, 'Failures'));
    const lists = await Promise.all(failing.map((a) => api(`/apps/${a.app}/tasks?state=failed&limit=5`)));
    const rows2 = [];
    failing.forEach((a, i) => {
      for (const t of lists[i]) {
        const last = t.last || {};
        const why = last.error || (last.signal ? `signal ${last.signal}` : `exit ${last.exit_code}`);
        const attempts = t.lost_attempts ? `${t.attempts} (${t.lost_attempts} lost)` : `${t.attempts}`;
        rows2.push(h('tr', {}, h('td', {}, `${t.task.app}.${t.task.index}`), h('td', {}, t.input), h('td', {}, a.name), h('td', {}, attempts),
          h('td', {}, last.outcome || ''), h('td', {}, why), h('td', {}, last.platform || ''),
          h('td', {}, h('pre', { class: 'tail' }, (last.output_tail || '').slice(-400)))));
      }
    });
    out.push(table(['task', 'input', 'application', 'attempts', 'outcome', 'reason', 'platform', 'output'], rows2,
      { id: 'failures' }));
  }
  return out;
}

// ---- workflows -----------------------------------------------------------------------

const DAG_DRAW_MAX = 400; // tasks: a larger workflow gets its table row only
const TASK_COLORS = { blocked: '#adb5bd', ready: '#74c0fc', leased: '#f08c00', running: '#f08c00',
  done: '#2f9e44', failed: '#e03131', cancelled: '#495057' };

function taskState(t) {
  if (t.state === 'waiting') return t.blocked ? 'blocked' : 'ready';
  return t.state;
}

// One row per workflow: its tasks by dependency state and the live stretch estimate
// ((elapsed + the remaining critical path) / the critical path, as `hetpilot status`).
function workflowTable(flows) {
  const rows = flows.map((a) => {
    const w = a.workflow;
    const c = a.counts;
    const k = (f) => `wf.${a.app}.${f}`;
    const finished = c.done + c.failed + c.cancelled === c.waiting + c.leased + c.running + c.done + c.failed + c.cancelled;
    const elapsed = Math.max(0, (Date.now() - a.submitted_at_ms) / 1000);
    const stretch = !finished && w.critical_path_secs > 0
      ? (elapsed + w.remaining_path_secs) / w.critical_path_secs : null;
    return h('tr', {}, h('td', {}, a.app), h('td', {}, a.name),
      num(w.blocked, k('blocked')), num(w.ready, k('ready')), num(c.leased, k('leased')), num(c.running, k('running')),
      num(c.done, k('done')), num(c.failed, k('failed')), num(c.cancelled, k('cancelled')),
      num(w.critical_path_secs, k('critical_path'), 1),
      stretch === null ? h('td', { class: 'muted' }, '-') : num(stretch, k('stretch'), 2));
  });
  return table(['app', 'name', 'blocked', 'ready', 'leased', 'running', 'done', 'failed', 'cancelled',
    'critical path (s)', 'stretch estimate'], rows, { id: 'workflow-table' });
}

// The DAG of a small workflow: one column per precedence level, a dot per task coloured
// by its state, a line per dependency.
function dagChart(tasks) {
  if (!tasks.length) return h('p', { class: 'muted' }, 'no tasks');
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const level = new Map();
  const levelOf = (t) => {
    if (level.has(t.name)) return level.get(t.name);
    let l = 0;
    for (const p of t.parents || []) {
      const pt = byName.get(p);
      if (pt) l = Math.max(l, levelOf(pt) + 1);
    }
    level.set(t.name, l);
    return l;
  };
  const columns = [];
  for (const t of tasks) {
    const l = levelOf(t);
    (columns[l] = columns[l] || []).push(t);
  }
  const tallest = Math.max(...columns.map((c) => (c ? c.length : 0)));
  const colW = 70;
  const rowH = Math.max(4, Math.min(18, 480 / tallest));
  const width = columns.length * colW + 20;
  const height = tallest * rowH + 20;
  const at = new Map();
  columns.forEach((col, l) => (col || []).forEach((t, i) => {
    at.set(t.name, [10 + l * colW + colW / 2, 10 + i * rowH + rowH / 2 + ((tallest - col.length) * rowH) / 2]);
  }));
  const edges = [];
  for (const t of tasks) {
    const [x2, y2] = at.get(t.name);
    for (const p of t.parents || []) {
      if (!at.has(p)) continue;
      const [x1, y1] = at.get(p);
      edges.push(s('line', { x1, y1, x2, y2, stroke: '#ced4da', 'stroke-width': 1 }));
    }
  }
  const dots = tasks.map((t) => {
    const [cx, cy] = at.get(t.name);
    const st = taskState(t);
    return s('circle', { cx, cy, r: Math.max(2, Math.min(6, rowH / 2 - 1)), fill: TASK_COLORS[st] || '#000',
      'data-task': t.name, 'data-state': st }, s('title', {}, `${t.name}: ${st}`));
  });
  return h('div', {},
    s('svg', { class: 'chart', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
      'aria-label': 'workflow DAG', id: 'dag' }, edges, dots),
    legend(Object.entries(TASK_COLORS).filter(([k]) => k !== 'leased').map(([name, c]) => ({ name, color: c }))));
}

async function workflowSection(apps) {
  const flows = apps.filter((a) => a.workflow);
  if (!flows.length) return [];
  const out = [h('h2', {}, 'Workflows'), workflowTable(flows)];
  const newest = flows[flows.length - 1];
  const total = Object.values(newest.counts).reduce((x, y) => x + y, 0);
  if (total <= DAG_DRAW_MAX) {
    const tasks = await api(`/apps/${newest.app}/tasks?limit=${DAG_DRAW_MAX}`);
    out.push(h('h3', {}, `${newest.app} ${newest.name}`), dagChart(tasks.filter((t) => t.name)));
  }
  return out;
}

// The 95% confidence half-width of a cell's measured mean runtime, e.g. " ±4%".
function ci(view, i, j, key) {
  const c = view.ci95 && view.ci95[i] ? view.ci95[i][j] : null;
  return typeof c === 'number' ? h('span', { 'data-k': key }, ` \u00b1${(100 * c).toFixed(0)}%`) : null;
}

function heatTable(title, view, matrix, key, digits) {
  const flat = matrix.flat().filter((v) => Number.isFinite(v));
  const max = Math.max(1e-9, ...flat);
  const rows = view.apps.map((a, i) => h('tr', {},
    h('td', {}, `${a.app} ${a.name}`),
    view.platforms.map((p, j) => {
      const v = matrix[i][j];
      const n = view.samples[i][j];
      const alpha = Number.isFinite(v) ? (0.08 + 0.72 * (v / max)).toFixed(2) : 0;
      return h('td', { class: 'cell' + (n === 0 ? ' prior' : ''),
        style: `background: rgba(46, 98, 217, ${alpha})`,
        title: n === 0 ? 'prior: not measured yet' : `${n} runs measured` },
      h('span', { 'data-k': `${key}.${a.app}.${p}` }, Number.isFinite(v) ? v.toFixed(digits) : '-'),
      h('small', {}, h('span', { 'data-k': `samples.${a.app}.${p}` }, `n=${n}`),
        ci(view, i, j, `ci.${key}.${a.app}.${p}`)));
    })));
  return h('div', {}, h('h2', {}, title),
    table(['application'].concat(view.platforms), rows, { class: 'heat', id: `heat-${key}` }));
}

async function pageAllocation(affinity) {
  const sched = await api('/schedule');
  const out = [h('h2', {}, 'Live allocation'),
    h('p', { class: 'muted' }, `policy ${sched.policy}; last round ${sched.at_ms ? ago(sched.at_ms) : 'not yet'}`)];
  const legendItems = sched.apps.map((a, i) => ({ name: `${a.app} ${a.name}`, color: color(i) }));
  const rows = sched.platforms.map((p, j) => ({
    label: `${p.name} (${p.agents} agents)`,
    total: p.slots,
    parts: sched.apps.map((a, i) => ({ name: `${a.app} ${a.name}`, value: a.cores[j], color: color(i) })),
  }));
  out.push(h('h2', {}, 'Cores per application per platform'),
    stackedBars(rows, { label: 'cores per application per platform' }), legend(legendItems));
  const cells = sched.apps.map((a) => h('tr', {}, h('td', {}, `${a.app} ${a.name}`), h('td', {}, a.owner),
    num(a.weight, `weight.${a.app}`, 3),
    sched.platforms.map((p, j) => num(a.cores[j], `cores.${a.app}.${p.name}`)),
    h('td', {}, a.placed_on || '')));
  out.push(table(['application', 'owner', 'weight'].concat(sched.platforms.map((p) => 'cores ' + p.name), ['TLPA']),
    cells, { id: 'allocation-table' }));
  const f = affinity.fairness;
  out.push(h('h2', {}, 'Fairness (1 - \u03c3/\u03bc of normalized throughputs)'),
    h('div', { class: 'cards' }, card('fairness of the allocation', typeof f === 'number' ? f.toFixed(3) : '-',
      'fairness')),
    lineChart([{ name: 'fairness', color: color(0), points: state.fairness.map((p) => [p.t, p.f]) }],
      { label: 'fairness over time', max: 1, height: 160 }));
  if (affinity.apps.length && affinity.platforms.length) {
    out.push(h('div', { class: 'grid' },
      heatTable('Throughput (tasks/hour)', affinity, affinity.throughput, 'throughput', 1),
      heatTable('Egocentric platform affinity (EPA)', affinity, affinity.egocentric, 'epa', 3),
      heatTable('Reciprocal platform affinity (RPA)', affinity, affinity.reciprocal, 'rpa', 3)));
    const co = affinity.normalized_difference.map((row) => row.map((v) => (v === null ? NaN : v)));
    out.push(heatTable('Co-runner affinity (normalized difference, %)', affinity, co, 'corunner', 1));
    out.push(h('p', { class: 'muted' }, 'n = successful runs measured, \u00b1 the 95% confidence half-width of their mean runtime; italic cells are the prior (not measured yet).'));
  } else {
    out.push(h('p', { class: 'muted' }, 'No unfinished application or platform to profile yet.'));
  }
  return out;
}

async function pagePlatforms() {
  if (!state.who.admin) {
    return [h('h2', {}, 'Platforms and pilots'), h('p', { class: 'muted' }, 'Platforms, pilots and agents are shown to admins.')];
  }
  const [platforms, pilots, agents] = await Promise.all([api('/platforms'), apiAll('/pilots', (p) => JSON.stringify([p.submitted_ms, p.name])), apiAll('/agents', (a) => a.agent)]);
  const out = [h('h2', {}, 'Platforms')];
  out.push(table(['platform', 'adapter', 'available', 'demand (cores)', 'failures', 'reason', 'checked'],
    platforms.map((p) => h('tr', {}, h('td', {}, p.name), h('td', {}, p.adapter),
      h('td', { 'data-k': `platform.${p.name}.available` }, p.available ? 'yes' : 'no'),
      num(p.demand_cores, `platform.${p.name}.demand`), num(p.failures, `platform.${p.name}.failures`),
      h('td', { class: 'muted' }, p.reason), h('td', {}, ago(p.checked_at_ms)))), { id: 'platforms-table' }));
  const states = ['queued', 'running', 'ended', 'failed', 'cancelled'];
  const names = [...new Set(pilots.map((p) => p.platform).concat(platforms.map((p) => p.name)))].sort();
  const count = (n, st) => pilots.filter((p) => p.platform === n && p.state === st).length;
  const wait = (n) => {
    const w = pilots.filter((p) => p.platform === n && p.job_started_ms).map((p) => p.job_started_ms - p.submitted_ms);
    return w.length ? (w.reduce((a, b) => a + b, 0) / w.length / 1000).toFixed(1) : '-';
  };
  out.push(h('h2', {}, 'Pilots (batch jobs) by state'));
  if (!pilots.length) out.push(h('p', { class: 'muted' }, 'No pilot submitted: no platform has a profile, or none was needed yet.'));
  else out.push(
    stackedBars(names.map((n) => ({ label: n, parts: states.map((st, i) => ({ name: st, value: count(n, st), color: color(i) })) })),
      { label: 'pilots by state' }),
    legend(states.map((st, i) => ({ name: st, color: color(i) }))),
    table(['platform'].concat(states, ['mean queue wait (s)']), names.map((n) => h('tr', {}, h('td', {}, n),
      states.map((st) => num(count(n, st), `pilots.${n}.${st}`)), h('td', { class: 'num' }, wait(n)))), { id: 'pilots-table' }));
  const bad = pilots.filter((p) => p.state === 'failed').slice(-20).reverse();
  if (bad.length) {
    out.push(h('h2', {}, 'Failed pilots'), table(['pilot', 'platform', 'batch job', 'reason', 'ended'],
      bad.map((p) => h('tr', {}, h('td', {}, p.name), h('td', {}, p.platform), h('td', {}, p.batch_job_id || '-'),
        h('td', {}, p.reason), h('td', {}, ago(p.ended_ms))))));
  }
  const live = agents.filter((a) => a.state === 'active' || a.state === 'draining');
  out.push(h('h2', {}, `Agents (${live.length} active or draining, ${agents.length} in all)`),
    table(['agent', 'platform', 'host', 'slots', 'tasks held', 'co-runners', 'state', 'batch job', 'last seen'],
      agents.slice(-50).reverse().map((a) => h('tr', {}, h('td', {}, a.agent), h('td', {}, a.platform),
        h('td', {}, a.hostname), num(a.slots, `agent.${a.agent}.slots`), num(a.tasks_held, `agent.${a.agent}.held`),
        h('td', { 'data-k': `agent.${a.agent}.apps` },
          (a.apps || []).map((id) => `${id} ${state.names.get(id) || ''}`.trim()).join(', ')),
        h('td', { 'data-k': `agent.${a.agent}.state` }, a.state), h('td', {}, a.batch_job_id || '-'),
        h('td', {}, ago(a.last_seen_ms)))), { id: 'agents-table' }));
  out.push(...groupTable(agents));
  out.push(...gpuTables(live));
  return out;
}

// Group leases: each parallel run with the agents that hold it, its head (which runs it)
// first, and the slots it holds on each.
function groupTable(agents) {
  const runs = agents.flatMap((a) => (a.group_leases || []).map((g) => ({ platform: a.platform, g })));
  if (!runs.length) return [];
  const agentCell = (m) => `${m.agent} (${m.host}: ${m.slots})`;
  return [h('h2', {}, `Parallel runs (${runs.length} group leases)`),
    table(['run', 'application', 'attempt', 'platform', 'head', 'members', 'slots'],
      runs.map(({ platform, g }) => {
        const key = `group.${g.task.app}.${g.task.index}`;
        const slots = g.members.reduce((n, m) => n + m.slots, 0);
        return h('tr', {}, h('td', {}, `${g.task.app}.${g.task.index}`),
          h('td', {}, state.names.get(g.task.app) || ''), h('td', {}, g.attempt), h('td', {}, platform),
          h('td', { 'data-k': `${key}.head` }, agentCell(g.members[0])),
          h('td', { 'data-k': `${key}.members` }, g.members.slice(1).map(agentCell).join(', ')),
          num(slots, `${key}.slots`));
      }), { id: 'groups-table' })];
}

// The GPUs and named counts of live agents: each device with its share in use and the
// runs on it, each named count offered and in use (from the manager's lease pool).
function gpuTables(live) {
  const out = [];
  const devices = live.flatMap((a) => (a.gpus || []).map((g) => ({ a, g })));
  if (devices.length) {
    out.push(h('h2', {}, `GPUs (${devices.length} on live agents)`),
      table(['agent', 'platform', 'gpu', 'model', 'memory (MiB)', 'in use', 'tasks', 'uuid'],
        devices.map(({ a, g }) => h('tr', {}, h('td', {}, a.agent), h('td', {}, a.platform),
          h('td', {}, g.index), h('td', { 'data-k': `gpu.${a.agent}.${g.index}.model` }, g.model),
          num(g.memory_mib, `gpu.${a.agent}.${g.index}.memory`), num(g.in_use, `gpu.${a.agent}.${g.index}.in_use`),
          num(g.tasks, `gpu.${a.agent}.${g.index}.tasks`), h('td', { class: 'muted' }, g.uuid))), { id: 'gpus-table' }));
  }
  const named = live.flatMap((a) => (a.resources || []).map((r) => ({ a, r })));
  if (named.length) {
    out.push(h('h2', {}, 'Named resources'),
      table(['agent', 'platform', 'resource', 'offered', 'in use'],
        named.map(({ a, r }) => h('tr', {}, h('td', {}, a.agent), h('td', {}, a.platform), h('td', {}, r.name),
          num(r.offered, `resource.${a.agent}.${r.name}.offered`), num(r.in_use, `resource.${a.agent}.${r.name}.in_use`))),
        { id: 'resources-table' }));
  }
  return out;
}

async function pageFairshare() {
  const usage = await apiAll('/usage', (u) => u.user);
  const max = Math.max(1e-9, ...usage.map((u) => u.decayed_usage));
  return [h('h2', {}, 'Fairshare usage and priority'),
    table(['user', 'usage', 'decayed usage', '', 'priority'], usage.map((u) => h('tr', {}, h('td', {}, u.user),
      num(u.usage, `usage.${u.user}.usage`, 2), num(u.decayed_usage, `usage.${u.user}.decayed`, 2),
      h('td', {}, h('span', { class: 'bar' }, h('span', { style: `width:${(100 * u.decayed_usage / max).toFixed(1)}%` }))),
      num(u.priority, `usage.${u.user}.priority`, 4))), { id: 'usage-table' }),
    h('p', { class: 'muted' }, 'Usage: core-seconds normalized by platform speed, times the multi-resource penalty; priority 2^(-U/S): higher goes first.')];
}

async function pageStaging() {
  const [moved, bw] = await Promise.all([api('/staging'), apiAll('/bandwidths', (b) => JSON.stringify([b.platform, b.endpoint]))]);
  const kinds = ['fetched', 'cached', 'stored'];
  const out = [h('h2', {}, 'Bytes moved by task staging')];
  if (!moved.length) out.push(h('p', { class: 'muted' }, 'No task has staged files since the manager started.'));
  else {
    out.push(stackedBars(moved.map((m) => ({ label: m.platform,
      parts: kinds.map((k, i) => ({ name: k, value: m[k], color: color(i) })) })), { label: 'bytes moved' }),
    legend(kinds.map((k, i) => ({ name: k, color: color(i) }))),
    table(['platform', 'fetched', 'from node cache', 'stored', 'planned by Het-HPS'], moved.map((m) => h('tr', {},
      h('td', {}, m.platform),
      [...kinds, 'planned'].map((k) => h('td', { class: 'num', 'data-k': `staging.${m.platform}.${k}`, title: `${m[k]} bytes` },
        bytes(m[k]))))),
    { id: 'staging-table' }),
    h('p', { class: 'muted' }, 'Planned: the input bytes the installed Het-HPS plans predicted each platform\u2019s agents would fetch (distinct files per agent, not knowing what the node caches already hold), beside what staging fetched and found in the caches.'));
  }
  out.push(h('h2', {}, 'Measured bandwidths (the Het-HPS plans\u2019 inputs)'),
    table(['platform', 'endpoint', 'transfers', 'bytes (window)', 'MiB/s'], bw.map((r) => h('tr', {},
      h('td', {}, r.platform), h('td', {}, r.endpoint), num(r.transfers, `bw.${r.platform}.${r.endpoint}.transfers`),
      h('td', { class: 'num' }, bytes(r.window_bytes)), num(r.mib_per_s, `bw.${r.platform}.${r.endpoint}.mibs`, 1))),
    { id: 'bandwidth-table' }));
  return out;
}

// ---- the loop ----------------------------------------------------------------------

function pageName() {
  const name = location.hash.replace('#', '');
  return ['apps', 'allocation', 'platforms', 'fairshare', 'staging'].includes(name) ? name : 'apps';
}

async function refresh() {
  if (state.busy || !state.token) return;
  state.busy = true;
  const page = pageName();
  try {
    const [apps, affinity] = await Promise.all([apiAll('/apps', (a) => a.app), api('/affinity')]);
    sampleApps(apps);
    sampleFairness(affinity.fairness);
    let content;
    if (page === 'apps') content = await pageApps(apps);
    else if (page === 'allocation') content = await pageAllocation(affinity);
    else if (page === 'platforms') content = await pagePlatforms();
    else if (page === 'fairshare') content = await pageFairshare();
    else content = await pageStaging();
    const main = document.getElementById('page');
    main.replaceChildren(...content);
    main.dataset.page = page;
    main.dataset.updated = String(Date.now());
    for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.page === page);
    document.getElementById('status').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    if (e instanceof Unauthorized) logout('The token was refused.');
    else document.getElementById('status').textContent = 'could not update: ' + e.message;
  } finally {
    state.busy = false;
  }
}

async function start() {
  try {
    state.who = await api('/whoami');
  } catch (e) {
    logout(e instanceof Unauthorized ? 'The token was refused.' : e.message);
    return;
  }
  document.getElementById('login').hidden = true;
  document.getElementById('nav').hidden = false;
  document.getElementById('page').hidden = false;
  document.getElementById('who').textContent = state.who.user + (state.who.admin ? ' (admin)' : '');
  await seedHistory();
  await refresh();
  state.timer = setInterval(refresh, REFRESH_MS);
}

function logout(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  clearInterval(state.timer);
  document.getElementById('nav').hidden = true;
  document.getElementById('page').hidden = true;
  document.getElementById('page').replaceChildren();
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = message || '';
}

document.getElementById('login-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token');
  state.token = input.value.trim();
  input.value = '';
  if (!state.token) return;
  sessionStorage.setItem(TOKEN_KEY, state.token);
  start();
});
document.getElementById('logout').addEventListener('click', () => logout(''));
window.addEventListener('hashchange', refresh);
if (state.token) start(); else logout('');
