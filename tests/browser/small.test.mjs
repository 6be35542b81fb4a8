// Small things users expect (issue 36.7), in the web UI: the completion
// check's tries and the upload limit on the Settings page, saved, read
// back and refused out of range with the helper's message; the Evals
// pages count a run's tasks from its suite ("31 of the suite's 41
// tasks"), not from the tasks that ran alone.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('small', { provider: false });

test('completion checks and the upload limit are settings', { timeout: 90000 }, async () => {
  const { helper } = env;
  const page = await env.page('/settings');
  const settings = () => helper.api('GET', '/api/v1/settings');
  await page.waitForFunction(() => document.getElementById('s-completionCheckTries').value === '2');
  assert.equal(await page.inputValue('#s-maxUploadMB'), '512');
  await page.fill('#s-completionCheckTries', '4');
  await page.click('#task-defaults button[type=submit]');
  await eventually('the tries saved', async () => (await settings()).completionCheckTries === 4);
  await page.fill('#s-maxUploadMB', '64');
  await page.locator('#s-maxUploadMB').evaluate((el) => el.form.requestSubmit());
  await eventually('the upload limit saved', async () => (await settings()).maxUploadMB === 64);
  await page.reload();
  await page.waitForFunction(() => document.getElementById('s-completionCheckTries').value === '4');
  assert.equal(await page.inputValue('#s-maxUploadMB'), '64');

  // Out of range: the browser's own check stops it, and the helper's
  // message shows when the form is sent anyway.
  await page.fill('#s-completionCheckTries', '11');
  assert.equal(await page.locator('#s-completionCheckTries').evaluate((el) => el.validity.rangeOverflow), true);
  await page.locator('#task-defaults form').evaluate((f) => { f.noValidate = true; f.requestSubmit(); });
  await page.waitForSelector('#toasts .toast.error >> text=completionCheckTries must be between 1 and 10 (got 11)');
  assert.equal((await settings()).completionCheckTries, 4);
  await env.done(page);
});

test('an eval run counts its tasks from its suite', { timeout: 60000 }, async () => {
  const { helper } = env;
  const id = '20260301-100000-abcd';
  const dir = path.join(helper.home, 'Evals', id);
  fs.mkdirSync(dir, { recursive: true });
  const tasks = Array.from({ length: 31 }, (_, i) => `task-${i}`);
  const start = new Date(Date.now() - 3600e3).toISOString();
  fs.writeFileSync(path.join(dir, 'results.json'), JSON.stringify({
    id, suite: 'linux-desktop', suiteDir: '/x', provider: 'Scripted', models: ['big'], repeat: 1,
    startedAt: start, endedAt: new Date().toISOString(), tasks, suiteTasks: 41,
    problems: [{ file: 'broken.json', error: 'unknown field' }],
    results: tasks.map((t) => ({ task: t, model: 'big', attempt: 1, success: true, category: 'passed' })),
  }));
  const page = await env.page('/evals');
  await page.waitForSelector(`tr[data-run="${id}"] .run-tasks`);
  assert.equal(await page.textContent(`tr[data-run="${id}"] .run-tasks`), "31 of the suite's 41 tasks");
  await page.click(`tr[data-run="${id}"] a`);
  await page.waitForSelector('#run-tasks');
  assert.equal(await page.textContent('#run-tasks'), "31 of the suite's 41 tasks × 1 run per model");
  await env.done(page);
});
