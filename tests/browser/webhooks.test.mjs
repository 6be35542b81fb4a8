// Webhooks and notifications in the web UI (issue 20): a webhook whose
// address is not http(s) is refused in words and nothing is stored; one
// added with a secret is listed without its path, sends a signed test that
// a local server receives, is turned off and on, and is removed; the
// notification toggles save notifyEvents; and the open dashboard shows a
// browser notification (Notifications API, permission granted) when a
// task in a real sandbox completes — but not while "a task completes" is
// turned off — even a task that started and ended between two of its polls.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { recordNotifications } from './lib/browser.mjs';
import { gate, text } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('webhooks');
const api = (method, p, body) => env.helper.api(method, `/api/v1${p}`, body);

// The webhook receiver under test: it records every request.
const got = [];
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    got.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
    res.end();
  });
});
before(() => new Promise((r) => receiver.listen(0, '127.0.0.1', r)));
after(() => new Promise((r) => { receiver.closeAllConnections(); receiver.close(r); }));

test('webhooks and notification toggles in Settings', { timeout: 60000 }, async () => {
  const page = await env.page('/settings#webhooks');
  await page.waitForSelector('text=No webhooks yet.');
  await page.click('#add-webhook-box summary');
  await page.fill('#new-webhook-name', 'team chat');
  await page.fill('#new-webhook-url', 'ftp://example.com/hook');
  await page.click('#add-webhook button[type=submit]');
  await page.locator('.toast', { hasText: 'is not http(s)' }).waitFor();
  assert.deepEqual((await api('GET', '/webhooks')).webhooks, [], 'a refused webhook is not stored');

  const secret = 'whsec-browser-test';
  const url = `http://127.0.0.1:${receiver.address().port}/services/T0/B0/private-token`;
  await page.fill('#new-webhook-url', url);
  await page.selectOption('#new-webhook-format', 'slack');
  await page.fill('#new-webhook-secret', secret);
  await page.locator('[data-webhook-event="task.review"]').uncheck();
  await page.click('#add-webhook button[type=submit]');
  const card = page.locator('[data-webhook="team chat"]');
  await card.waitFor();
  const shown = await card.textContent();
  assert.match(shown, /Slack/);
  assert.match(shown, new RegExp(`http://127\\.0\\.0\\.1:${receiver.address().port}/… · task\\.ended, task\\.question, task\\.permission · signed`));
  assert.doesNotMatch(await page.content(), /private-token|whsec-browser-test/, 'neither the path nor the secret is in the page');
  assert.equal(await page.inputValue('#new-webhook-secret'), '', 'the secret is cleared from the form');

  await card.locator('button:has-text("Send a test")').click();
  await card.locator('.test-result.ok', { hasText: 'Delivered: it answered 200.' }).waitFor();
  assert.equal(got.length, 1);
  const [req] = got;
  assert.equal(req.path, '/services/T0/B0/private-token');
  assert.equal(req.headers['x-hivecrew-event'], 'webhook.test');
  assert.match(JSON.parse(req.body).text, /^Hivecrew test: this webhook works/);
  const [, t, mac] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(req.headers['x-hivecrew-signature']);
  assert.equal(crypto.createHmac('sha256', secret).update(`${t}.${req.body}`).digest('hex'), mac, 'the signature verifies');

  // Off and on again: the card says which, and so does the API.
  await card.locator('button:has-text("Turn off")').click();
  await card.locator('.badge', { hasText: /^off$/ }).waitFor();
  assert.equal((await api('GET', '/webhooks')).webhooks[0].enabled, false, 'turned off');
  await card.locator('button:has-text("Turn on")').click();
  await card.locator('.badge', { hasText: /^on$/ }).waitFor();
  assert.equal((await api('GET', '/webhooks')).webhooks[0].enabled, true, 'turned on again (within the step-up window)');

  page.once('dialog', (d) => d.accept());
  await card.locator('button:has-text("Remove")').click();
  await page.waitForSelector('text=No webhooks yet.');
  assert.deepEqual((await api('GET', '/webhooks')).webhooks, []);

  // Notification toggles.
  await page.goto(`${env.helper.base}/settings#notifications`);
  await page.locator('[data-notify="completed"]:checked').waitFor(); // every notification is on by default
  await page.locator('[data-notify="completed"]').uncheck();
  await page.locator('[data-notify="plan"]').uncheck();
  await page.click('#notify-form button[type=submit]');
  await eventually('notifyEvents saved', async () =>
    JSON.stringify((await api('GET', '/settings')).notifyEvents) === JSON.stringify(['failed', 'question', 'permission', 'review']));
  await page.reload();
  await page.locator('[data-notify="question"]:checked').waitFor();
  assert.equal(await page.isChecked('[data-notify="completed"]'), false);
  assert.equal(await page.isChecked('[data-notify="question"]'), true);
  // Not allowed here: the button asks on a click while the browser has
  // not been asked; once refused, the page says where to allow it.
  const perm = await page.evaluate(() => Notification.permission);
  assert.equal(await page.isVisible('#browser-notify'), perm === 'default');
  if (perm === 'denied') assert.match(await page.textContent('#browser-notify-status'), /allow notifications for this site/);
  await env.done(page);
});

test('the open dashboard shows a browser notification when a task completes', { timeout: 180000 }, async () => {
  const page = await env.page(null, { permissions: ['notifications'] });
  await recordNotifications(page);
  await page.goto(`${env.helper.base}/settings#notifications`);
  await page.waitForSelector('#browser-notify-status:has-text("This browser shows them")');
  assert.equal(await page.isVisible('#browser-notify'), false);
  // The page's clock is the test's: it can hold the dashboard's polls.
  await page.clock.install();
  await page.goto(`${env.helper.base}/`);

  // Runs a task held at its first turn until the dashboard lists it, then
  // lets it complete and waits for its card to go.
  const run = async (marker, summary) => {
    const g = gate();
    env.llm.script(marker, [g.hold(text('Done.'))], { success: true, summary });
    const task = await api('POST', '/tasks', { description: `Tidy up ${marker}` });
    await page.locator(`.task-card[data-task-id="${task.id}"]`).waitFor({ timeout: 120000 });
    await g.reached;
    g.release();
    await env.helper.waitTask(task.id, 'its end', (t) => t.status === 'completed', 120000);
    await page.locator(`.task-card[data-task-id="${task.id}"]`).waitFor({ state: 'detached', timeout: 30000 });
    return task;
  };
  await api('PATCH', '/settings', { notifyEvents: ['failed'] });
  await run('[[unnoticed]]', 'Tidied quietly.');
  await api('PATCH', '/settings', { notifyEvents: ['completed'] });
  const shown = await run('[[noticed]]', 'Tidied the desk.');
  const notes = await eventually('a notification', async () => {
    const n = await page.evaluate(() => window.shownNotes);
    return n.length ? n : null;
  });
  assert.deepEqual(notes, [{ title: 'Task completed', body: `${shown.title}: Tidied the desk.` }],
    'one notification, of the task that completed while completed tasks were notified');

  // A task that starts and ends between two polls (the page's timers held
  // meanwhile) is told too: the dashboard never listed it as active. The
  // poll the clock's jump fires finishes first: a slow one would list it.
  let inflight = 0;
  const api1 = (r) => r.url().includes('/api/v1/');
  page.on('request', (r) => { if (api1(r)) inflight++; });
  page.on('requestfinished', (r) => { if (api1(r)) inflight--; });
  page.on('requestfailed', (r) => { if (api1(r)) inflight--; });
  await page.clock.pauseAt(Date.now() + 3000);
  let quiet = 0;
  await eventually('the polls in flight to end', async () => {
    quiet = inflight === 0 ? quiet + 1 : 0;
    return quiet >= 5;
  });
  env.llm.script('[[between polls]]', [text('Done.')], { success: true, summary: 'Tidied in a blink.' });
  const quick = await api('POST', '/tasks', { description: 'Tidy up [[between polls]]' });
  await env.helper.waitTask(quick.id, 'its end', (t) => t.status === 'completed', 120000);
  assert.equal(await page.locator(`.task-card[data-task-id="${quick.id}"]`).count(), 0, 'the dashboard never showed it');
  await page.clock.resume();
  await eventually('a notification of the task that ended between polls', async () =>
    (await page.evaluate(() => window.shownNotes)).length === 2);
  assert.deepEqual((await page.evaluate(() => window.shownNotes))[1], { title: 'Task completed', body: `${quick.title}: Tidied in a blink.` });
  await env.done(page);
});
