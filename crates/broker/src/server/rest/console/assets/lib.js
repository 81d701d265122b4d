// Shared helpers of the Runnel console: HTTP calls to the broker's HTTP API, a DOM builder that never parses
// HTML (every text is a text node: record contents cannot inject markup), formatting and record decoding.

/** The cluster id (from GET /v3/clusters), fetched once. */
let clusterId = null;

/** Calls the HTTP API: `path` relative to the listener, JSON in and out. Throws an Error with the REST
 *  Proxy error message (`{error_code, message}`) for a non-2xx answer. */
export async function api(path, { method = 'GET', body } = {}) {
  const opts = { method, headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!r.ok) {
    const msg = (data && data.message) || `${r.status} ${r.statusText}`;
    const err = new Error(msg);
    err.status = r.status;
    err.code = data && data.error_code;
    throw err;
  }
  return data;
}

/** `/v3/clusters/{id}` + `rest`. */
export async function v3(rest = '') {
  if (!clusterId) {
    const r = await api('/v3/clusters');
    clusterId = r.data[0].cluster_id;
  }
  return `/v3/clusters/${encodeURIComponent(clusterId)}${rest}`;
}

/** Builds an element: h('a', {href: '#/x', class: 'y', onclick: f}, 'text', child, [children]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** A table: `cols` = [[header, row => cell]], `rows` = data; `attrs` for the table element. */
export function table(cols, rows, attrs = {}) {
  return h('table', attrs,
    h('thead', {}, h('tr', {}, cols.map(([name]) => h('th', {}, name)))),
    h('tbody', {}, rows.map(r => h('tr', {}, cols.map(([, f]) => h('td', {}, f(r)))))));
}

/** Shows a short message in the corner (`kind`: 'ok' or 'error'). */
export function toast(msg, kind = 'ok') {
  const el = h('div', { class: `toast ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, msg);
  document.getElementById('toasts').appendChild(el);
  setTimeout(() => el.remove(), kind === 'error' ? 8000 : 3000);
}

/** Runs `f`, reporting a thrown error as a toast; returns its result or undefined. */
export async function attempt(f) {
  try { return await f(); } catch (e) { toast(e.message, 'error'); return undefined; }
}

export function fmtNum(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  return Number(n).toLocaleString('en-US', { maximumFractionDigits: 1 });
}

export function fmtBytes(n) {
  if (n === null || n === undefined || n < 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function fmtTime(ms) {
  if (ms === null || ms === undefined || ms < 0) return '–';
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/** base64 → bytes (null stays null). */
export function unb64(s) {
  if (s === null || s === undefined) return null;
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** base64 of a UTF-8 string. */
export function b64(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Bytes shown as `format` ('text', 'json' or 'hex'); JSON that does not parse falls back to text. */
export function render(bytes, format) {
  if (bytes === null) return h('span', { class: 'muted' }, 'null');
  if (format === 'hex') {
    const hex = Array.from(bytes, b => b.toString(16).padStart(2, '0')).join(' ');
    return h('code', { class: 'hex' }, hex);
  }
  const text = utf8.decode(bytes);
  if (format === 'json') {
    try { return h('pre', { class: 'json' }, JSON.stringify(JSON.parse(text), null, 2)); } catch { /* text */ }
  }
  return h('span', { class: 'text' }, text);
}

/** Parses Prometheus text format into [{name, labels, value}] (comments skipped). */
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const l of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

/** The sum of the samples named `name` whose labels include `match` (all when `match` is empty) and
 *  that have none of the labels in `without`. */
export function pick(samples, name, match = {}, without = []) {
  let sum = 0;
  let found = false;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (without.some(l => l in s.labels)) continue;
    if (Object.entries(match).some(([k, v]) => s.labels[k] !== v)) continue;
    sum += s.value;
    found = true;
  }
  return found ? sum : null;
}

/** GET /metrics parsed, with the time it was read. */
export async function scrape() {
  const r = await fetch('/metrics');
  if (!r.ok) throw new Error(`/metrics: ${r.status}`);
  return { at: Date.now(), samples: parseMetrics(await r.text()) };
}

/** Rates per second between two scrapes of a counter (null until there are two). */
export function rate(prev, cur, name, match = {}, without = []) {
  if (!prev) return null;
  const a = pick(prev.samples, name, match, without);
  const b = pick(cur.samples, name, match, without);
  if (a === null || b === null) return null;
  const dt = (cur.at - prev.at) / 1000;
  return dt > 0 ? Math.max(0, (b - a) / dt) : null;
}
