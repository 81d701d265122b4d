// Topics: the list (filter, create, delete) and one topic's partitions and configs (edit, reset).

import { api, v3, h, table, toast, attempt, fmtNum, fmtBytes } from './lib.js';

const enc = encodeURIComponent;

function createForm(onCreated) {
  const name = h('input', { name: 'topic_name', placeholder: 'name', required: true, 'data-testid': 'new-topic-name' });
  const parts = h('input', { name: 'partitions', type: 'number', min: 1, value: '1', 'data-testid': 'new-topic-partitions' });
  const rf = h('input', { name: 'replication_factor', type: 'number', min: 1, value: '1' });
  const configs = h('input', { name: 'configs', placeholder: 'configs: retention.ms=3600000, …' });
  const submit = async ev => {
    ev.preventDefault();
    const cfg = configs.value.split(',').map(s => s.trim()).filter(Boolean).map(kv => {
      const i = kv.indexOf('=');
      return { name: kv.slice(0, i).trim(), value: kv.slice(i + 1).trim() };
    });
    await attempt(async () => {
      await api(await v3('/topics'), {
        method: 'POST',
        body: { topic_name: name.value.trim(), partitions_count: Number(parts.value),
          replication_factor: Number(rf.value), configs: cfg },
      });
      toast(`Topic ${name.value} created`);
      onCreated(name.value.trim());
    });
  };
  return h('form', { class: 'inline', onsubmit: submit, 'data-testid': 'create-topic' },
    h('strong', {}, 'New topic '), name, h('label', {}, 'partitions ', parts), h('label', {}, 'replicas ', rf),
    configs, h('button', { type: 'submit' }, 'Create'));
}

export async function topicList(root) {
  const c = await api('/console/api/cluster');
  const filter = h('input', { type: 'search', placeholder: 'filter topics', 'data-testid': 'topic-filter' });
  const showInternal = h('input', { type: 'checkbox' });
  const body = h('div');
  const draw = () => {
    const f = filter.value.toLowerCase();
    const rows = c.topics.filter(t => (showInternal.checked || !t.internal) && t.name.toLowerCase().includes(f));
    body.replaceChildren(table([
      ['topic', t => h('a', { href: `#/topics/${enc(t.name)}` }, t.name)],
      ['partitions', t => t.partitions],
      ['replicas', t => t.replication_factor],
      ['under-replicated', t => h('span', { class: t.under_replicated ? 'warn' : '' }, t.under_replicated)],
      ['offline', t => h('span', { class: t.offline ? 'bad' : '' }, t.offline)],
      ['', t => h('a', { href: `#/topics/${enc(t.name)}/messages` }, 'messages')],
    ], rows, { 'data-testid': 'topics' }), h('p', { class: 'muted' }, `${rows.length} of ${c.topics.length} topics`));
  };
  filter.addEventListener('input', draw);
  showInternal.addEventListener('change', draw);
  root.replaceChildren(
    h('h1', {}, 'Topics'),
    createForm(name => { location.hash = `#/topics/${enc(name)}`; }),
    h('div', { class: 'toolbar' }, filter, h('label', {}, showInternal, ' internal topics')),
    body);
  draw();
}

function configRow(topicPath, c, reload) {
  const input = h('input', { value: c.value ?? '', 'data-testid': `config-${c.name}`, disabled: c.is_read_only });
  const save = async () => attempt(async () => {
    await api(`${topicPath}/configs/${enc(c.name)}`, { method: 'PUT', body: { value: input.value } });
    toast(`${c.name} = ${input.value}`);
    reload();
  });
  const reset = async () => attempt(async () => {
    await api(`${topicPath}/configs/${enc(c.name)}`, { method: 'DELETE' });
    toast(`${c.name} reset`);
    reload();
  });
  return h('tr', {},
    h('td', {}, c.name),
    h('td', {}, c.is_sensitive ? h('span', { class: 'muted' }, '(sensitive)') : input),
    h('td', { class: 'muted' }, c.source),
    h('td', {}, c.is_read_only ? '' : [
      h('button', { onclick: save, 'data-testid': `save-${c.name}` }, 'Save'), ' ',
      c.is_default ? '' : h('button', { onclick: reset, class: 'secondary' }, 'Reset')]));
}

async function configsSection(topic) {
  const topicPath = await v3(`/topics/${enc(topic)}`);
  const section = h('section', { 'data-testid': 'configs' });
  const load = async () => {
    const r = await api(`${topicPath}/configs`);
    const rows = r.data.sort((a, b) => Number(a.is_default) - Number(b.is_default) || a.name.localeCompare(b.name));
    section.replaceChildren(h('h2', {}, 'Configs'), h('table', { class: 'configs' },
      h('thead', {}, h('tr', {}, ['name', 'value', 'source', ''].map(x => h('th', {}, x)))),
      h('tbody', {}, rows.map(c => configRow(topicPath, c, load)))));
  };
  await load();
  return section;
}

export async function topicDetail(root, [topic], ctx) {
  const parts = h('div');
  const del = async () => {
    if (!confirm(`Delete topic ${topic} and all its records?`)) return;
    await attempt(async () => {
      await api(await v3(`/topics/${enc(topic)}`), { method: 'DELETE' });
      toast(`Topic ${topic} deleted`);
      location.hash = '#/topics';
    });
  };
  root.replaceChildren(
    h('h1', {}, 'Topic ', h('span', { class: 'mono' }, topic)),
    h('div', { class: 'toolbar' },
      h('a', { class: 'button', href: `#/topics/${enc(topic)}/messages`, 'data-testid': 'open-messages' }, 'Messages'),
      h('button', { class: 'danger', onclick: del, 'data-testid': 'delete-topic' }, 'Delete topic')),
    h('h2', {}, 'Partitions'), parts,
    await configsSection(topic));
  ctx.every(5000, async () => {
    const t = await attempt(() => api(`/console/api/topics/${enc(topic)}`));
    if (!t) return;
    const total = t.partitions.reduce((n, p) => n + Math.max(0, p.high_watermark - p.log_start_offset), 0);
    parts.replaceChildren(table([
      ['partition', p => p.partition],
      ['leader', p => (p.leader < 0 ? h('span', { class: 'bad' }, 'none') : p.leader)],
      ['replicas', p => p.replicas.join(', ')],
      ['ISR', p => h('span', { class: p.isr.length < p.replicas.length ? 'warn' : '' }, p.isr.join(', '))],
      ['start offset', p => fmtNum(p.log_start_offset)],
      ['end offset', p => fmtNum(p.high_watermark)],
      ['size', p => fmtBytes(p.size_bytes)],
    ], t.partitions, { 'data-testid': 'partitions' }), h('p', { class: 'muted' }, `${fmtNum(total)} records`));
  });
}
