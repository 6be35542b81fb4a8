// Follow-ups in the web UI (issue 20): a finished task's Continue opens the
// new-task form with a notice; the new task (in a real sandbox) gets the
// earlier output in its inbox and a summary of the earlier task; the agent
// window's Rename names it, and a generated title never replaces that
// name; Rerun… runs it again on another model.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('followups');

test('Continue, Rename and Rerun on a finished task', { timeout: 180000 }, async () => {
  const { llm, helper } = env;
  const A = '[[weblist]]';
  llm.script(A, [tool('write_file', { path: 'outbox/list.txt', contents: 'milk\neggs\n' }), text('Done.')],
    { success: true, summary: 'Wrote the shopping list.' });
  llm.title = 'Shopping list';
  const first = await helper.api('POST', '/api/v1/tasks', { description: `Write a shopping list ${A}` });
  await helper.waitTask(first.id, 'the end', (t) => t.status === 'completed', 120000);
  await eventually('the generated title', async () => (await helper.task(first.id)).title === 'Shopping list');

  const page = await env.page(`/tasks/${first.id}`);
  await page.waitForSelector('#result:not([hidden])');
  assert.equal(await page.textContent('#task-title'), 'Shopping list');
  await page.click('#btn-continue');
  await page.waitForURL(/\/\?continue=/);
  await page.waitForSelector('#continue-notice:not([hidden])');
  assert.match(await page.textContent('#continue-text'), /Continuing “Shopping list”: its 1 output file will be in the inbox/);

  const B = '[[webcontinue]]';
  llm.script(B, [tool('run_shell', { command: 'cat /mnt/shared/inbox/list.txt' }), text('Read it.')],
    { success: true, summary: 'Checked the list.' });
  llm.title = 'A title the user will not see';
  await page.fill('#task-description', `Check the list ${B}`);
  await page.click('#advanced summary');
  await page.selectOption('#policy-run_shell', 'allow');
  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  // Renamed at once, before the model's title can arrive.
  await page.click('#btn-rename');
  await page.fill('#rename-title', 'Check the shopping list');
  await page.click('#rename-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#task-title').textContent === 'Check the shopping list' && !document.querySelector('#task-title').hidden);
  const done = await helper.waitTask(id, 'the end', (t) => t.status === 'completed', 120000);
  assert.equal(done.continuationSourceTaskId, first.id);
  assert.equal(done.title, 'Check the shopping list');
  assert.equal(done.titleEdited, true);
  const bodies = llm.bodies(B);
  assert.match(bodies[0], /Wrote the shopping list\./, 'the agent got the earlier summary');
  assert.match(bodies[1], /stdout.{0,8}milk/, 'the agent read the earlier output in its inbox');
  await page.waitForSelector('#source-link');
  assert.equal(await page.getAttribute('#source-link', 'href'), `/tasks/${first.id}`);
  await page.waitForSelector('#result:not([hidden])');
  assert.equal(await page.textContent('#task-title'), 'Check the shopping list');

  // Rerun… on the other model.
  await page.click('#btn-rerun');
  await page.waitForSelector('#rerun-form:not([hidden])');
  assert.equal(await page.inputValue('#rerun-model'), done.modelId);
  await page.fill('#rerun-model', 'scripted-small');
  await page.click('#rerun-form button[type=submit]');
  await page.waitForURL((u) => u.pathname.startsWith('/tasks/') && !u.pathname.endsWith(id));
  const rid = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  const rerun = await helper.waitTask(rid, 'the rerun', (t) => t.status === 'completed', 120000);
  assert.equal(rerun.modelId, 'scripted-small');
  assert.equal(rerun.rerunOf, id);
  assert.ok(llm.bodies(B).slice(bodies.length).every((b) => JSON.parse(b).model === 'scripted-small'), 'the rerun asked the other model');
  await env.done(page);
});
