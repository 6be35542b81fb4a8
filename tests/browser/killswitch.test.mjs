// The kill switch: "Stop all agents" on the dashboard stops every running
// task, and the in-page shortcut (Ctrl+Shift+Escape) does the same from
// another page.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gate, tool } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('killswitch');

/** Starts a task whose model never answers (until the agent hangs up). */
async function stuckTask(marker) {
  const g = gate();
  env.llm.script(marker, [g.hold(tool('wait', { seconds: 0.1 }))]);
  const t = await env.helper.api('POST', '/api/v1/tasks', { description: `Keep thinking ${marker}` });
  await g.reached;
  return t;
}

test('Stop all agents on the dashboard stops every running and paused task', { timeout: 120000 }, async () => {
  const { helper } = env;
  const [a, b] = await Promise.all([stuckTask('[[stop-a]]'), stuckTask('[[stop-b]]')]);
  for (const t of [a, b]) assert.equal((await helper.task(t.id)).status, 'running');
  const page = await env.page('/');
  await page.waitForSelector(`[data-task-id="${a.id}"] [data-status="running"]`);
  await page.waitForSelector(`[data-task-id="${b.id}"] [data-status="running"]`);

  // Pause one from its card: the kill switch stops paused agents too.
  await page.click(`[data-task-id="${a.id}"] button[data-action="pause"]`);
  await page.waitForSelector(`[data-task-id="${a.id}"] [data-status="paused"]`);
  assert.equal((await helper.task(a.id)).status, 'paused');
  assert.equal(await page.textContent(`[data-task-id="${a.id}"] button[data-action="pause"]`), 'Resume');

  await page.click('#kill-switch');
  await page.waitForSelector('#toasts >> text=Stopped 2 agents.');
  for (const t of [a, b]) {
    const done = await helper.task(t.id);
    assert.equal(done.status, 'cancelled', `${t.id} is ${done.status}`);
  }
  await page.waitForSelector('#no-active:not([hidden])');
  assert.equal(await page.locator('#active-tasks [data-task-id]').count(), 0);
  const status = await helper.api('GET', '/api/v1/system/status');
  assert.equal(status.agents.running + status.agents.paused, 0);
  await env.done(page);
});

test('the kill switch shortcut works inside any page', { timeout: 120000 }, async () => {
  const { helper } = env;
  const c = await stuckTask('[[stop-c]]');
  const page = await env.page(`/tasks/${c.id}`);
  await page.waitForSelector('#task-meta [data-status="running"]');
  await page.keyboard.press('Control+Shift+Escape');
  await page.waitForSelector('#task-meta [data-status="cancelled"]');
  assert.equal((await helper.task(c.id)).status, 'cancelled');
  await page.waitForSelector('#toasts >> text=Stopped 1 agent.');
  await env.done(page);
});

test('Cancel in the agent window stops that task only', { timeout: 120000 }, async () => {
  const { helper } = env;
  const [d, e] = await Promise.all([stuckTask('[[cancel-d]]'), stuckTask('[[cancel-e]]')]);
  const page = await env.page(`/tasks/${d.id}`);
  await page.waitForSelector('#task-meta [data-status="running"]');
  page.once('dialog', (dlg) => dlg.accept());
  await page.click('#btn-cancel');
  await page.waitForSelector('#task-meta [data-status="cancelled"]');
  await page.waitForSelector('#result:not([hidden])');
  assert.equal((await helper.task(d.id)).status, 'cancelled');
  assert.equal((await helper.task(e.id)).status, 'running', 'the other task goes on');
  await helper.api('PATCH', `/api/v1/tasks/${e.id}`, { action: 'cancel' });
  await env.done(page);
});
