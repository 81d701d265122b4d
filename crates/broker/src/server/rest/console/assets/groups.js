// Consumer groups: the list with state and lag, and one group's members, assignment, committed offsets and
// lag per partition, a chart of its lag over time, and an offset reset.

import { api, v3, h, table, toast, attempt, fmtNum } from './lib.js';
import { lineChart, Series } from './charts.js';

const enc = encodeURIComponent;

export async function groupList(root, _params, ctx) {
  const body = h('div');
  root.replaceChildren(h('h1', {}, 'Consumer groups'), body);
  ctx.every(5000, async () => {
    const r = await attempt(async () => api(await v3('/consumer-groups')));
    if (!r) return;
    const lags = await Promise.all(r.data.map(g =>
      v3(`/consumer-groups/${enc(g.consumer_group_id)}/lag-summary`).then(api).catch(() => null)));
    body.replaceChildren(table([
      ['group', ([g]) => h('a', { href: `#/groups/${enc(g.consumer_group_id)}` }, g.consumer_group_id)],
      ['state', ([g]) => g.state],
      ['total lag', ([, l]) => (l ? fmtNum(l.total_lag) : '–')],
      ['max lag', ([, l]) => (l && l.max_lag_topic_name ? `${fmtNum(l.max_lag)} (${l.max_lag_topic_name}-${l.max_lag_partition_id})` : '–')],
    ], r.data.map((g, i) => [g, lags[i]]), { 'data-testid': 'groups' }),
    r.data.length ? '' : h('p', { class: 'muted' }, 'No consumer groups yet.'));
  });
}

function resetForm(group, onDone) {
  const topic = h('input', { placeholder: 'topic', required: true, 'data-testid': 'reset-topic' });
  const to = h('select', { 'data-testid': 'reset-to' },
    ['earliest', 'latest', 'offset', 'timestamp'].map(x => h('option', { value: x }, x)));
  const value = h('input', { placeholder: 'offset or time (ms)', 'data-testid': 'reset-value' });
  const submit = async ev => {
    ev.preventDefault();
    const body = { topic: topic.value.trim(), to: to.value };
    if (to.value === 'offset') body.offset = Number(value.value);
    if (to.value === 'timestamp') body.timestamp = Number(value.value);
    await attempt(async () => {
      const r = await api(`/console/api/consumer-groups/${enc(group)}/offsets`, { method: 'POST', body });
      const failed = r.offsets.filter(o => o.error);
      if (failed.length) toast(`Reset failed for ${failed.length} partition(s): ${failed[0].error}`, 'error');
      else toast(`Offsets of ${body.topic} reset for ${r.offsets.length} partition(s)`);
      onDone();
    });
  };
  return h('form', { class: 'inline', onsubmit: submit, 'data-testid': 'reset-form' },
    h('strong', {}, 'Reset offsets '), topic, to, value,
    h('button', { type: 'submit', 'data-testid': 'reset-submit' }, 'Reset'),
    h('span', { class: 'muted' }, ' (only while the group has no members)'));
}

export async function groupDetail(root, [group], ctx) {
  const base = await v3(`/consumer-groups/${enc(group)}`);
  const head = h('div', { class: 'stats' });
  const members = h('div');
  const lagTable = h('div');
  const chart = h('div', { 'data-testid': 'lag-chart' });
  const history = new Series(90);
  const refresh = async () => {
    const g = await attempt(() => api(base));
    if (!g) return;
    const [consumers, lags] = await Promise.all([api(`${base}/consumers`), api(`${base}/lags`)]);
    const total = lags.data.reduce((n, l) => n + l.lag, 0);
    history.push(total);
    head.replaceChildren(
      h('div', { class: 'stat' }, h('div', { class: 'stat-value', 'data-testid': 'group-state' }, g.state), h('div', { class: 'stat-label' }, 'state')),
      h('div', { class: 'stat' }, h('div', { class: 'stat-value' }, consumers.data.length), h('div', { class: 'stat-label' }, 'members')),
      h('div', { class: 'stat' }, h('div', { class: 'stat-value', 'data-testid': 'total-lag' }, fmtNum(total)), h('div', { class: 'stat-label' }, 'total lag')));
    members.replaceChildren(table([
      ['member', m => m.consumer_id], ['client', m => m.client_id], ['instance', m => m.instance_id ?? '–'],
    ], consumers.data, { 'data-testid': 'members' }));
    lagTable.replaceChildren(table([
      ['topic', l => h('a', { href: `#/topics/${enc(l.topic_name)}` }, l.topic_name)],
      ['partition', l => l.partition_id],
      ['committed', l => fmtNum(l.current_offset)],
      ['end offset', l => fmtNum(l.log_end_offset)],
      ['lag', l => h('span', { 'data-testid': `lag-${l.topic_name}-${l.partition_id}` }, fmtNum(l.lag))],
      ['assigned to', l => l.consumer_id || '–'],
    ], lags.data, { 'data-testid': 'lags' }));
    chart.replaceChildren(lineChart([{ label: 'total lag', values: history.values }], { title: 'Lag over time', unit: fmtNum }));
  };
  root.replaceChildren(
    h('h1', {}, 'Consumer group ', h('span', { class: 'mono' }, group)),
    head, chart, h('h2', {}, 'Lag by partition'), lagTable, h('h2', {}, 'Members'), members,
    resetForm(group, refresh));
  ctx.every(2000, refresh);
}
