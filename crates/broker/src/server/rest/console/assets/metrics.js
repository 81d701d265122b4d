// Metrics charts read from this broker's /metrics (Prometheus text) every 2 s: throughput, requests,
// latency, replication health and the process.

import { h, scrape, rate, pick, fmtNum, fmtBytes } from './lib.js';
import { lineChart, Series } from './charts.js';

const T = 'kafka_server_brokertopicmetrics_';
const CHARTS = [
  { title: 'Bytes per second', unit: v => `${fmtBytes(v)}/s`, lines: [
    ['in', (p, c) => rate(p, c, `${T}bytesin_total`, {}, ['topic'])],
    ['out', (p, c) => rate(p, c, `${T}bytesout_total`, {}, ['topic'])]] },
  { title: 'Records in per second', unit: fmtNum, lines: [
    ['records', (p, c) => rate(p, c, `${T}messagesin_total`, {}, ['topic'])]] },
  { title: 'Requests per second', unit: fmtNum, lines: [
    ['Produce', (p, c) => rate(p, c, 'kafka_network_requestmetrics_requests_total', { request: 'Produce' })],
    ['Fetch', (p, c) => rate(p, c, 'kafka_network_requestmetrics_requests_total', { request: 'Fetch' })]] },
  { title: 'Produce latency p99 (ms)', unit: fmtNum, lines: [
    ['total', (_p, c) => pick(c.samples, 'kafka_network_requestmetrics_totaltimems', { request: 'Produce', quantile: '0.99' })],
    ['remote', (_p, c) => pick(c.samples, 'kafka_network_requestmetrics_remotetimems', { request: 'Produce', quantile: '0.99' })]] },
  { title: 'Partitions', unit: fmtNum, lines: [
    ['under-replicated', (_p, c) => pick(c.samples, 'kafka_server_replicamanager_underreplicatedpartitions')],
    ['under min ISR', (_p, c) => pick(c.samples, 'kafka_server_replicamanager_underminisrpartitioncount')]] },
  { title: 'Connections', unit: fmtNum, lines: [
    ['open', (_p, c) => pick(c.samples, 'kafka_server_socket_server_metrics_connection_count')]] },
  { title: 'Resident memory', unit: fmtBytes, lines: [
    ['RSS', (_p, c) => pick(c.samples, 'process_resident_memory_bytes')]] },
];

export async function metricsView(root, _params, ctx) {
  const grid = h('div', { class: 'charts', 'data-testid': 'metrics-charts' });
  root.replaceChildren(h('h1', {}, 'Metrics (this broker)'),
    h('p', { class: 'muted' }, 'From ', h('a', { href: '/metrics' }, '/metrics'), ', every 2 s.'), grid);
  const series = CHARTS.map(c => c.lines.map(() => new Series(90)));
  let prev = null;
  ctx.every(2000, async () => {
    let cur;
    try { cur = await scrape(); } catch { return; }
    CHARTS.forEach((c, i) => c.lines.forEach(([, f], j) => series[i][j].push(f(prev, cur))));
    prev = cur;
    grid.replaceChildren(...CHARTS.map((c, i) => lineChart(
      c.lines.map(([label], j) => ({ label, values: series[i][j].values })), { title: c.title, unit: c.unit })));
  });
}
