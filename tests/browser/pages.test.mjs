// Every page in light and dark, wide (1280x800) and phone-sized (390x844):
// a screenshot of each under out/screens for review, no horizontal
// scrolling on a phone, labelled controls, the dark scheme applied, and the
// keyboard path to the kill switch. Also the history's search and status
// filter, and the environments view (open a busy VM's task, stop idle VMs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openPage, shot } from './lib/browser.mjs';
import { gate, text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('pages');
const SIZES = { wide: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };
const data = {};

async function prepare() {
  if (data.done) return;
  const { helper, llm } = env;
  llm.script('[[done]]', [
    tool('run_shell', { command: "xterm -geometry 90x24+60+60 -e sh -c 'echo Quarterly numbers: 42; sleep 600' >/dev/null 2>&1 &" }),
    tool('wait', { seconds: 0.5 }),
    tool('write_file', { path: 'outbox/report.txt', contents: 'Q2: 42\n' }),
    text('Saved the report.'),
  ], { success: true, summary: 'Saved the quarterly report to outbox/report.txt.' });
  const done = await helper.api('POST', '/api/v1/tasks', { description: 'Write the quarterly report [[done]]', toolPolicy: { run_shell: 'allow' } });
  await helper.waitTask(done.id, 'completion', (t) => t.status === 'completed', 60000);
  const asked = gate();
  llm.script('[[live]]', [
    tool('run_shell', { command: "xterm -bg '#204080' -fg white -geometry 100x30+100+80 -e sh -c 'echo Working on the invoices; sleep 600' >/dev/null 2>&1 &" }),
    asked.hold(tool('ask_multiple_choice', { question: 'Which invoices should I file?', options: ['This month', 'Last month'] })),
  ]);
  await helper.api('POST', '/api/v1/schedules', { title: 'Morning report', description: 'Write the morning report',
    schedule: { recurrence: { type: 'weekly', daysOfWeek: [2, 4], hour: 8, minute: 5 }, timeZone: 'Europe/Berlin' } });
  const live = await helper.api('POST', '/api/v1/tasks', { description: 'File the invoices [[live]]', toolPolicy: { run_shell: 'allow' } });
  await asked.reached;
  asked.release();
  await helper.waitTask(live.id, 'its question', (t) => !!t.pendingQuestion, 30000);
  Object.assign(data, { done, live });
}

/** Pages, with what to wait for before the screenshot. */
function pages() {
  return [
    { name: 'dashboard', path: '/', ready: `[data-task-id="${data.live.id}"] img.thumb:not([hidden])` },
    { name: 'agent', path: `/tasks/${data.live.id}`, ready: '#question-card:not([hidden])', live: true },
    { name: 'replay', path: `/tasks/${data.done.id}/replay`, ready: '#replay-shot:not([hidden])' },
    { name: 'schedules', path: '/schedules', ready: '#schedules li[data-title="Morning report"]' },
    { name: 'environments', path: '/environments', ready: '#vm-rows tr[data-state="busy"]' },
    { name: 'evals', path: '/evals', ready: '#evals-empty:not([hidden])' },
    { name: 'settings', path: '/settings', ready: '[data-provider="Scripted"]' },
    { name: 'welcome', path: '/welcome', ready: '#first-task-step:not([hidden])' },
    { name: 'notfound', path: '/no/such/page', ready: 'h1:has-text("Page not found")' },
  ];
}

/** Controls without an accessible name, and images without alt text. */
function unlabelled(page) {
  return page.evaluate(() => {
    const bad = [];
    const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
    for (const el of document.querySelectorAll('input, select, textarea')) {
      if (!visible(el) || el.type === 'hidden') continue;
      const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.title;
      if (!named) bad.push(`${el.tagName.toLowerCase()}#${el.id}`);
    }
    for (const el of document.querySelectorAll('button, a[href]')) {
      if (visible(el) && !(el.textContent.trim() || el.getAttribute('aria-label') || el.querySelector('img[alt]:not([alt=""])'))) bad.push(el.outerHTML.slice(0, 80));
    }
    for (const img of document.querySelectorAll('img')) if (!img.hasAttribute('alt')) bad.push(img.outerHTML.slice(0, 80));
    return bad;
  });
}

test('every page in light and dark, wide and phone-sized', { timeout: 180000 }, async () => {
  await prepare();
  const page = await env.page();
  const backgrounds = {};
  for (const p of pages()) {
    await page.setViewportSize(SIZES.wide);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(env.helper.base + p.path);
    await page.waitForSelector(p.ready);
    if (p.live) await page.waitForFunction(() => document.getElementById('live').naturalWidth > 0);
    assert.deepEqual(await unlabelled(page), [], `${p.name}: unlabelled controls`);
    for (const [size, viewport] of Object.entries(SIZES)) {
      await page.setViewportSize(viewport);
      for (const scheme of ['light', 'dark']) {
        await page.emulateMedia({ colorScheme: scheme });
        await page.waitForSelector(p.ready);
        const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
        backgrounds[`${p.name}-${scheme}`] = bg;
        if (size === 'phone') {
          const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
          assert.ok(over <= 0, `${p.name} scrolls sideways by ${over}px on a phone (${scheme})`);
        }
        await shot(page, `${p.name}-${scheme}-${size}`);
      }
    }
    assert.equal(backgrounds[`${p.name}-light`], 'rgb(246, 247, 249)', `${p.name} light background`);
    assert.equal(backgrounds[`${p.name}-dark`], 'rgb(18, 21, 27)', `${p.name} dark background`);
  }

  // The sign-in page, for a browser without a session.
  const anon = await openPage(env.browser);
  env.pages.push(anon);
  await anon.goto(env.helper.base + '/');
  await anon.waitForSelector('#signin-title');
  for (const [size, viewport] of Object.entries(SIZES)) {
    await anon.setViewportSize(viewport);
    for (const scheme of ['light', 'dark']) {
      await anon.emulateMedia({ colorScheme: scheme });
      await shot(anon, `signin-${scheme}-${size}`);
    }
  }
  await env.done(anon);
  await env.done(page);
});

test('keyboard: skip link first, the kill switch reachable, focus visible', { timeout: 60000 }, async () => {
  await prepare();
  const page = await env.page('/');
  await page.waitForSelector('#task-provider option', { state: 'attached' });
  const order = [];
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press('Tab');
    order.push(await page.evaluate(() => {
      const el = document.activeElement;
      return { id: el.id, cls: el.className, text: el.textContent.trim().slice(0, 30), outline: getComputedStyle(el).outlineStyle, waiting: !!el.closest('#attention') };
    }));
  }
  assert.equal(order[0].cls, 'skip', `first Tab: ${JSON.stringify(order[0])}`);
  const kill = order.findIndex((e) => e.id === 'kill-switch');
  assert.ok(kill > 0, `the kill switch is in the Tab order: ${JSON.stringify(order)}`);
  assert.notEqual(order[kill].outline, 'none', 'focus is visible');
  // After the header come the tasks waiting for the user (the
  // "Waiting for you" strip: a link to each task and its action), then
  // the task form.
  const waiting = order.slice(kill + 1).findIndex((e) => !e.waiting);
  assert.ok(order.slice(kill + 1, kill + 1 + waiting).every((e) => e.waiting), `after the header come the waiting tasks: ${JSON.stringify(order)}`);
  assert.equal(order[kill + 1 + waiting]?.id, 'task-description', `then the task form: ${JSON.stringify(order)}`);
  await env.done(page);
});

test('history: search and status filter; open a finished task', { timeout: 60000 }, async () => {
  await prepare();
  const page = await env.page('/');
  const row = page.locator(`#history details[data-task-id="${data.done.id}"]`);
  await row.waitFor();
  await page.fill('#history-search', 'quarterly');
  await row.waitFor();
  await page.fill('#history-search', 'no such words');
  await page.waitForSelector('#history-empty:has-text("No task matches.")');
  assert.equal(await row.count(), 0);
  await page.fill('#history-search', '');
  await page.selectOption('#history-status', 'failed');
  await page.waitForSelector('#history-empty:not([hidden])');
  await page.selectOption('#history-status', 'completed');
  await row.waitFor();
  await row.locator('summary').click();
  await row.locator('.file-link:has-text("report.txt")').waitFor();
  assert.match(await row.textContent(), /Saved the quarterly report to outbox\/report.txt./);
  await row.locator('a:has-text("Replay")').click();
  await page.waitForURL(new RegExp(`/tasks/${data.done.id}/replay$`));
  // The replay: the scrubber moves through the screenshots.
  await page.waitForSelector('#replay-shot:not([hidden])');
  const first = await page.getAttribute('#replay-shot', 'src');
  const max = Number(await page.getAttribute('#scrubber', 'max'));
  assert.ok(max >= 2, `several screenshots (${max + 1})`);
  await page.focus('#scrubber');
  await page.keyboard.press('End');
  await eventually('the last screenshot', async () => (await page.getAttribute('#replay-shot', 'src')) !== first);
  assert.match(await page.textContent('#step-pos'), new RegExp(`Screenshot ${max + 1} of ${max + 1}`));
  for (const f of ['html', 'markdown', 'json']) {
    assert.equal(await page.getAttribute(`#export-${f}`, 'href'), `/api/v1/tasks/${data.done.id}/export?format=${f}`);
  }
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-markdown')]);
  assert.match(download.suggestedFilename(), /\.md$/);
  assert.match(await page.textContent('#transcript'), /Write the quarterly report/);
  await env.done(page);
});

test('environments: open a busy VM\'s task; stop idle VMs in bulk', { timeout: 60000 }, async () => {
  await prepare();
  const page = await env.page('/environments');
  const busy = page.locator(`a[data-vm-task="${data.live.id}"]`);
  await busy.waitFor();
  const idle = await eventually('an idle VM', async () => {
    const ids = await page.locator('#vm-rows tr[data-state="ready"]').evaluateAll((rows) => rows.map((r) => r.dataset.vmRow));
    return ids.length ? ids : null;
  });
  for (const id of idle) await page.check(`input[data-vm="${id}"]`);
  await page.click('#stop-selected');
  for (const id of idle) await page.waitForSelector(`tr[data-vm-row="${id}"]`, { state: 'detached' });
  const vms = (await env.helper.api('GET', '/api/v1/vms')).vms.map((v) => v.id);
  for (const id of idle) assert.ok(!vms.includes(id), `${id} was stopped`);
  await busy.click();
  await page.waitForURL(new RegExp(`/tasks/${data.live.id}$`));
  await page.waitForSelector('#question-card:not([hidden])');
  await env.done(page);
});
