// Drives the Runnel web console in a real browser (Debian's Chromium through playwright-core) against a
// running broker: tests/test_console.py starts the broker, prepares records and a consumer group, and runs
//
//   node console.mjs <http base url> <artifacts dir>
//
// Protocol with the test: each step prints "STEP <name>"; "CONSUME" asks the test to consume the lagging
// group's records and commit; "METRIC <name>=<value>" lines are measurements. Exit code 0 = every step
// passed; on a failure a screenshot of the page is saved as failure.png and the error is printed.

import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const [base, artifacts] = process.argv.slice(2);
const WAIT = 20_000;
mkdirSync(artifacts, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const problems = [];
page.on('pageerror', e => problems.push(`page error: ${e.message}`));
page.on('console', m => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
page.on('response', r => { if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`); });

const step = name => console.log(`STEP ${name}`);
const shot = name => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
const text = sel => page.locator(sel).first().innerText({ timeout: WAIT });
const until = async (what, f) => {
  const end = Date.now() + WAIT;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(200);
  }
};
const restGet = async path => (await page.request.get(`${base}${path}`)).json();

try {
  step('overview');
  await page.goto(`${base}/console/`);
  const paint = await page.evaluate(() => new Promise(resolve => {
    const get = () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime;
    const poll = () => (get() !== undefined ? resolve(get()) : setTimeout(poll, 20));
    poll();
  }));
  console.log(`METRIC first_contentful_paint_ms=${paint.toFixed(0)}`);
  await until('the brokers count', async () => (await text('[data-testid=brokers-count] .stat-value')) === '1');
  await until('the throughput sparkline', async () => (await page.locator('svg.spark').count()) === 3);
  await shot('overview');

  step('create topic');
  await page.click('nav a[data-nav=topics]');
  await page.fill('[data-testid=new-topic-name]', 'console-orders');
  await page.fill('[data-testid=new-topic-partitions]', '2');
  await page.click('[data-testid=create-topic] button[type=submit]');
  await page.waitForURL(/#\/topics\/console-orders$/, { timeout: WAIT });
  await until('two partitions', async () => (await page.locator('[data-testid=partitions] tbody tr').count()) === 2);

  step('change a config');
  await page.fill('[data-testid="config-retention.ms"]', '3600000');
  await page.click('[data-testid="save-retention.ms"]');
  const { cluster } = { cluster: (await restGet('/v3/clusters')).data[0].cluster_id };
  await until('retention.ms = 3600000', async () =>
    (await restGet(`/v3/clusters/${cluster}/topics/console-orders/configs/retention.ms`)).value === '3600000');
  await shot('topic');

  step('produce and tail');
  await page.click('[data-testid=open-messages]');
  await page.waitForSelector('[data-testid=produce-form]', { timeout: WAIT });
  await page.click('[data-testid=tail-toggle]');
  await page.waitForSelector('[data-testid=tail-toggle][data-state=on]', { timeout: WAIT });
  await page.selectOption('[data-testid=produce-partition]', '0');
  await page.fill('[data-testid=produce-key]', 'order-1');
  await page.fill('[data-testid=produce-value]', '{"item":"book","qty":2}');
  await page.fill('[data-testid=produce-headers]', 'source: console');
  await page.click('[data-testid=produce-submit]');
  await until('the record in the live tail', async () =>
    (await page.locator('[data-testid=tail] [data-testid=record-row]').count()) === 1);
  const tailed = await text('[data-testid=tail] [data-testid=record-row] td.value');
  if (!tailed.includes('"item":"book"')) throw new Error(`live tail shows ${tailed}`);

  step('browse');
  await page.click('[data-testid=browse-load]');
  await until('the record in the browser', async () =>
    (await page.locator('[data-testid=records] [data-testid=record-row]').count()) === 1);
  await page.selectOption('[data-testid=browse-format]', 'json');
  const pretty = await text('[data-testid=records] [data-testid=record-row] td.value pre.json');
  if (!pretty.includes('"qty": 2')) throw new Error(`JSON view shows ${pretty}`);
  const headers = await text('[data-testid=records] [data-testid=record-row] td:last-child');
  if (!headers.includes('source: console')) throw new Error(`headers show ${headers}`);
  await shot('messages');
  await page.click('[data-testid=tail-toggle]');

  step('browse 1000 records');
  await page.goto(`${base}/console/#/topics/console-bulk/messages`);
  await page.waitForSelector('[data-testid=browse-limit]', { timeout: WAIT });
  await page.fill('[data-testid=browse-limit]', '1000');
  const t0 = Date.now();
  await page.click('[data-testid=browse-load]');
  await until('1000 rows', async () =>
    (await page.locator('[data-testid=records] [data-testid=record-row]').count()) === 1000);
  console.log(`METRIC browse_1000_records_ms=${Date.now() - t0}`);

  step('group lag');
  await page.goto(`${base}/console/#/groups`);
  await page.waitForSelector('[data-testid=groups] a', { timeout: WAIT });
  await page.click('[data-testid=groups] a >> text=console-group');
  await until('lag 15', async () => (await text('[data-testid=total-lag]')) === '15');
  console.log('CONSUME');
  await until('lag 0', async () => (await text('[data-testid=total-lag]')) === '0');
  await until('the lag chart', async () => (await page.locator('[data-testid=lag-chart] svg polyline').count()) === 1);
  await shot('group');

  step('reset offsets');
  await until('the group empty', async () => (await text('[data-testid=group-state]')) === 'EMPTY');
  await page.fill('[data-testid=reset-topic]', 'console-lag');
  await page.selectOption('[data-testid=reset-to]', 'earliest');
  await page.click('[data-testid=reset-submit]');
  await until('lag 20 after the reset', async () => (await text('[data-testid=total-lag]')) === '20');

  step('metrics');
  await page.click('nav a[data-nav=metrics]');
  await until('the charts', async () => (await page.locator('[data-testid=metrics-charts] svg').count()) >= 6);
  await until('a second scrape (rates need two)', async () =>
    (await page.locator('[data-testid=metrics-charts] svg polyline[points*=" "]').count()) > 0);
  await shot('metrics');

  if (problems.length) throw new Error(problems.join('\n'));
  console.log('DONE');
} catch (e) {
  await shot('failure').catch(() => {});
  console.error(`FAILED: ${e.stack || e}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
