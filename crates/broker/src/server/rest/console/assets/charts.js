// Small SVG charts, drawn by hand (no chart library): a sparkline and a line chart with a y-axis scale.

const NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** The polyline points of `values` (nulls skipped) in a `w`×`h` box, scaled to [0, max]. */
function points(values, w, h, max) {
  const n = values.length;
  const step = n > 1 ? w / (n - 1) : 0;
  return values
    .map((v, i) => (v === null ? null : `${(i * step).toFixed(1)},${(h - (v / max) * h).toFixed(1)}`))
    .filter(p => p !== null)
    .join(' ');
}

/** A sparkline of `values` (numbers or null). */
export function sparkline(values, { width = 160, height = 32, cls = '' } = {}) {
  const el = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: `spark ${cls}` });
  const max = Math.max(1e-9, ...values.filter(v => v !== null));
  el.appendChild(svg('polyline', { points: points(values, width, height - 2, max), fill: 'none' }));
  return el;
}

/** A line chart: `series` = [{label, values}] sharing one x axis of samples; `unit` formats the scale. */
export function lineChart(series, { width = 520, height = 160, unit = v => String(v), title = '' } = {}) {
  const pad = { l: 64, r: 8, t: 26, b: 16 };
  const w = width - pad.l - pad.r;
  const hgt = height - pad.t - pad.b;
  const all = series.flatMap(s => s.values).filter(v => v !== null);
  const max = Math.max(1, ...all) * 1.1;
  const el = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img' });
  const label = svg('text', { x: 8, y: 12, class: 'chart-title' });
  label.textContent = title;
  el.appendChild(label);
  for (const f of [0, 0.5, 1]) {
    const y = pad.t + hgt - f * hgt;
    el.appendChild(svg('line', { x1: pad.l, x2: pad.l + w, y1: y, y2: y, class: 'grid' }));
    const t = svg('text', { x: pad.l - 4, y: y + 4, class: 'axis', 'text-anchor': 'end' });
    t.textContent = unit(max * f);
    el.appendChild(t);
  }
  series.forEach((s, i) => {
    const g = svg('g', { transform: `translate(${pad.l},${pad.t})`, class: `series s${i}` });
    g.appendChild(svg('polyline', { points: points(s.values, w, hgt, max), fill: 'none' }));
    el.appendChild(g);
    const key = svg('text', { x: width - pad.r - (series.length - i) * 130, y: 12, class: `legend s${i}` });
    key.textContent = s.label;
    el.appendChild(key);
  });
  return el;
}

/** A rolling window of samples (at most `size`). */
export class Series {
  constructor(size = 60) { this.size = size; this.values = []; }
  push(v) { this.values.push(v); if (this.values.length > this.size) this.values.shift(); }
  last() { return this.values.length ? this.values[this.values.length - 1] : null; }
}
