// The console's entry point: a router over the URL fragment (#/topics/orders/messages …). Each view renders
// into <main> and registers its timers through `ctx.every`, which are all stopped when the route changes.

import { api, h, toast } from './lib.js';
import { overview } from './overview.js';
import { topicList, topicDetail } from './topics.js';
import { messages } from './messages.js';
import { groupList, groupDetail } from './groups.js';
import { metricsView } from './metrics.js';

const routes = [
  [/^\/?$/, overview, 'overview'],
  [/^\/topics$/, topicList, 'topics'],
  [/^\/topics\/([^/]+)$/, topicDetail, 'topics'],
  [/^\/topics\/([^/]+)\/messages$/, messages, 'topics'],
  [/^\/groups$/, groupList, 'groups'],
  [/^\/groups\/([^/]+)$/, groupDetail, 'groups'],
  [/^\/metrics$/, metricsView, 'metrics'],
];

let timers = [];
let generation = 0;

function stopTimers() {
  for (const t of timers) clearInterval(t);
  timers = [];
}

async function show() {
  stopTimers();
  const gen = ++generation;
  // Routed on the raw fragment, each part decoded after: a name holding '/' (encoded %2F) stays one part.
  const path = location.hash.replace(/^#/, '') || '/';
  const root = document.getElementById('view');
  for (const a of document.querySelectorAll('nav a')) a.classList.remove('active');
  const found = routes.find(([re]) => re.test(path));
  if (!found) {
    root.replaceChildren(h('p', {}, 'No such page. ', h('a', { href: '#/' }, 'Overview')));
    return;
  }
  const [re, view, nav] = found;
  document.querySelector(`nav a[data-nav="${nav}"]`)?.classList.add('active');
  const ctx = {
    /** Runs `f` now and every `ms` while this route is shown. */
    every(ms, f) {
      const tick = () => { if (gen === generation) f(); };
      tick();
      timers.push(setInterval(tick, ms));
    },
    /** True while this route is still the one shown (for loops that outlive a click). */
    live() { return gen === generation; },
  };
  try {
    const params = re.exec(path).slice(1).map(p => {
      try { return decodeURIComponent(p); } catch { return p; }
    });
    await view(root, params, ctx);
  } catch (e) {
    root.replaceChildren(h('p', { class: 'error', role: 'alert' }, e.message));
  }
}

window.addEventListener('hashchange', show);
window.addEventListener('DOMContentLoaded', async () => {
  try {
    const r = await api('/v3/clusters');
    document.getElementById('cluster-id').textContent = `cluster ${r.data[0].cluster_id}`;
  } catch (e) { toast(e.message, 'error'); }
  show();
});
