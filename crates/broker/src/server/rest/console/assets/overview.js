// The cluster overview: brokers, the controller, partition health and a throughput sparkline.

import { api, h, table, fmtNum, fmtBytes, scrape, rate } from './lib.js';
import { sparkline, Series } from './charts.js';

const BYTES_IN = 'kafka_server_brokertopicmetrics_bytesin_total';
const BYTES_OUT = 'kafka_server_brokertopicmetrics_bytesout_total';
const MESSAGES_IN = 'kafka_server_brokertopicmetrics_messagesin_total';

function stat(label, value, testid, cls = '') {
  return h('div', { class: `stat ${cls}`, 'data-testid': testid },
    h('div', { class: 'stat-value' }, value), h('div', { class: 'stat-label' }, label));
}

export async function overview(root, _params, ctx) {
  const c = await api('/console/api/cluster');
  const partitions = c.topics.reduce((n, t) => n + t.partitions, 0);
  const under = c.topics.reduce((n, t) => n + t.under_replicated, 0);
  const offline = c.topics.reduce((n, t) => n + t.offline, 0);
  const bytesIn = new Series(60);
  const bytesOut = new Series(60);
  const msgsIn = new Series(60);
  const spark = h('div', { class: 'sparks' });
  root.replaceChildren(
    h('h1', {}, 'Cluster'),
    h('div', { class: 'stats' },
      stat('brokers', c.brokers.length, 'brokers-count'),
      stat('controller', c.controller_id, 'controller-id'),
      stat('topics', c.topics.filter(t => !t.internal).length, 'topics-count'),
      stat('partitions', partitions, 'partitions-count'),
      stat('under-replicated', under, 'under-replicated', under ? 'warn' : 'good'),
      stat('offline', offline, 'offline', offline ? 'bad' : 'good')),
    h('h2', {}, 'Throughput (this broker)'),
    spark,
    h('h2', {}, 'Brokers'),
    table([
      ['id', b => b.id],
      ['host', b => b.host],
      ['port', b => b.port],
      ['rack', b => b.rack ?? '–'],
      ['role', b => (b.id === c.controller_id ? 'controller' : '')],
    ], c.brokers, { 'data-testid': 'brokers' }),
  );
  let prev = null;
  ctx.every(2000, async () => {
    let cur;
    try { cur = await scrape(); } catch { return; }
    bytesIn.push(rate(prev, cur, BYTES_IN, {}, ['topic']));
    bytesOut.push(rate(prev, cur, BYTES_OUT, {}, ['topic']));
    msgsIn.push(rate(prev, cur, MESSAGES_IN, {}, ['topic']));
    prev = cur;
    const row = (label, s, fmt) => h('div', { class: 'spark-row' },
      h('span', { class: 'spark-label' }, label), sparkline(s.values),
      h('span', { class: 'spark-value' }, s.last() === null ? '–' : fmt(s.last())));
    spark.replaceChildren(
      row('bytes in', bytesIn, v => `${fmtBytes(v)}/s`),
      row('bytes out', bytesOut, v => `${fmtBytes(v)}/s`),
      row('records in', msgsIn, v => `${fmtNum(v)}/s`));
  });
}
