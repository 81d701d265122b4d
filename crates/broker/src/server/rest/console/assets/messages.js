// The message browser of one topic: records of a partition from an offset, a time, the oldest or the newest,
// shown as text, JSON or hex; a live tail that long-polls for new records; a form that produces one record.

import { api, v3, h, toast, attempt, fmtTime, unb64, b64, render } from './lib.js';

const enc = encodeURIComponent;
/** Rows the live tail keeps on screen. */
const TAIL_ROWS = 500;

function recordRow(r, format) {
  const headers = r.headers.map(x => h('div', { class: 'header' }, `${x.name}: `, render(unb64(x.value), 'text')));
  return h('tr', { 'data-testid': 'record-row', 'data-offset': r.offset },
    h('td', { class: 'num' }, r.offset),
    h('td', { class: 'nowrap' }, fmtTime(r.timestamp)),
    h('td', { class: 'key' }, render(unb64(r.key), format)),
    h('td', { class: 'value' }, render(unb64(r.value), format)),
    h('td', {}, headers));
}

function recordTable(testid) {
  const tbody = h('tbody');
  const el = h('table', { class: 'records', 'data-testid': testid },
    h('thead', {}, h('tr', {}, ['offset', 'timestamp', 'key', 'value', 'headers'].map(x => h('th', {}, x)))), tbody);
  return { el, tbody };
}

function produceForm(topic, partitionCount) {
  const partition = h('select', { 'data-testid': 'produce-partition' }, h('option', { value: '' }, 'any'),
    Array.from({ length: partitionCount }, (_, i) => h('option', { value: String(i) }, String(i))));
  const key = h('input', { placeholder: 'key (empty: none)', 'data-testid': 'produce-key' });
  const value = h('textarea', { placeholder: 'value', rows: 3, 'data-testid': 'produce-value' });
  const type = h('select', {}, h('option', { value: 'STRING' }, 'string'), h('option', { value: 'JSON' }, 'JSON'));
  const headers = h('textarea', { placeholder: 'headers, one name: value per line', rows: 2, 'data-testid': 'produce-headers' });
  const submit = async ev => {
    ev.preventDefault();
    await attempt(async () => {
      const record = { value: { type: type.value, data: type.value === 'JSON' ? JSON.parse(value.value) : value.value } };
      if (key.value) record.key = { type: 'STRING', data: key.value };
      if (partition.value !== '') record.partition_id = Number(partition.value);
      record.headers = headers.value.split('\n').filter(l => l.includes(':')).map(l => {
        const i = l.indexOf(':');
        return { name: l.slice(0, i).trim(), value: b64(l.slice(i + 1).trim()) };
      });
      const r = await api(await v3(`/topics/${enc(topic)}/records`), { method: 'POST', body: record });
      toast(`Produced to partition ${r.partition_id} at offset ${r.offset}`);
    });
  };
  return h('form', { class: 'produce', onsubmit: submit, 'data-testid': 'produce-form' },
    h('h2', {}, 'Produce a record'),
    h('div', { class: 'row' }, h('label', {}, 'partition ', partition), h('label', {}, 'value as ', type), key),
    value, headers, h('button', { type: 'submit', 'data-testid': 'produce-submit' }, 'Produce'));
}

export async function messages(root, [topic], ctx) {
  const t = await api(`/console/api/topics/${enc(topic)}`);
  const partition = h('select', { 'data-testid': 'browse-partition' },
    t.partitions.map(p => h('option', { value: String(p.partition) }, `partition ${p.partition}`)));
  const mode = h('select', { 'data-testid': 'browse-mode' },
    ['oldest', 'newest', 'offset', 'timestamp'].map(m => h('option', { value: m }, m)));
  const offset = h('input', { type: 'number', min: 0, value: '0', 'data-testid': 'browse-offset' });
  const time = h('input', { type: 'datetime-local', step: 1 });
  const limit = h('input', { type: 'number', min: 1, max: 5000, value: '100', 'data-testid': 'browse-limit' });
  const format = h('select', { 'data-testid': 'browse-format' },
    ['text', 'json', 'hex'].map(f => h('option', { value: f }, f)));
  const status = h('span', { class: 'muted', 'data-testid': 'browse-status' });
  const results = recordTable('records');
  let last = [];
  const draw = () => results.tbody.replaceChildren(...last.map(r => recordRow(r, format.value)));
  const load = async () => {
    const q = new URLSearchParams({ partition: partition.value, limit: limit.value });
    if (mode.value === 'newest') q.set('from', 'end');
    if (mode.value === 'offset') q.set('offset', offset.value);
    if (mode.value === 'timestamp') q.set('timestamp', String(Date.parse(time.value + 'Z') || 0));
    const r = await attempt(() => api(`/console/api/topics/${enc(topic)}/records?${q}`));
    if (!r) return;
    last = r.records;
    draw();
    status.textContent = `${r.records.length} record${r.records.length === 1 ? '' : 's'} · partition offsets ${r.log_start_offset}–${r.high_watermark}`;
  };
  format.addEventListener('change', () => { draw(); drawTail(); });

  const tail = recordTable('tail');
  let tailRows = [];
  let tailing = false;
  const tailButton = h('button', { class: 'secondary', 'data-testid': 'tail-toggle' }, 'Start live tail');
  const drawTail = () => tail.tbody.replaceChildren(...tailRows.map(r => recordRow(r, format.value)));
  const runTail = async () => {
    const p = partition.value;
    const base = `/console/api/topics/${enc(topic)}/records?partition=${enc(p)}`;
    let r = await attempt(() => api(`${base}&from=end&limit=1`));
    let next = r ? r.next_offset : 0;
    while (tailing && ctx.live() && r) {
      r = await attempt(() => api(`${base}&offset=${next}&limit=500&wait_ms=5000`));
      if (!r || !tailing) break;
      next = r.next_offset;
      if (r.records.length) {
        tailRows = r.records.slice().reverse().concat(tailRows).slice(0, TAIL_ROWS);
        drawTail();
      }
    }
    tailing = false;
    tailButton.textContent = 'Start live tail';
  };
  tailButton.addEventListener('click', () => {
    tailing = !tailing;
    tailButton.textContent = tailing ? 'Stop live tail' : 'Start live tail';
    tailButton.setAttribute('data-state', tailing ? 'on' : 'off');
    if (tailing) runTail();
  });

  root.replaceChildren(
    h('h1', {}, 'Messages of ', h('a', { class: 'mono', href: `#/topics/${enc(topic)}` }, topic)),
    h('form', { class: 'inline', onsubmit: ev => { ev.preventDefault(); load(); } },
      partition, mode, h('label', {}, 'offset ', offset), h('label', {}, 'time (UTC) ', time),
      h('label', {}, 'limit ', limit), h('label', {}, 'show as ', format),
      h('button', { type: 'submit', 'data-testid': 'browse-load' }, 'Load'), status),
    results.el,
    h('h2', {}, 'Live tail ', tailButton), tail.el,
    produceForm(topic, t.partitions.length));
  await load();
}
