// Comparing models: the new-task form runs one description on two models
// (POST /tasks/batch, real sandbox VMs), the page moves to the batch's
// compare view, and both tasks are shown side by side to their ends, each
// with its model and its own result.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { suite } from './lib/suite.mjs';

const env = suite('compare');

test('one task on two models runs as a batch and is compared side by side', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  // Each model's verdict says which model it was (the request names it).
  llm.script('"model":"scripted-small"', [], { success: true, summary: 'The small model did it.' });
  llm.script('"model":"scripted-large"', [], { success: true, summary: 'The large model did it.' });

  const page = await env.page('/');
  await page.fill('#task-description', 'Say which model you are');
  await page.waitForFunction(() => document.getElementById('task-model').value === 'scripted-large');
  await page.click('#compare summary');
  // A bad number of runs is refused in the form, before any request.
  await page.click('#add-target');
  await page.fill('#task-copies', '9');
  await page.click('#start-task');
  assert.match(await page.textContent('#form-status'), /1 to 8/);
  await page.fill('#task-copies', '1');
  // A compared model without a model id is refused too.
  await page.click('#start-task');
  assert.match(await page.textContent('#form-status'), /Choose a model/);
  await page.fill('#compare-targets [data-role=model]', 'scripted-small');
  await page.click('#start-task');

  await page.waitForURL(/\/batches\/[^/]+$/);
  const batch = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  const list = await helper.api('GET', `/api/v1/tasks?batchId=${encodeURIComponent(batch)}`);
  assert.equal(list.total, 2);
  assert.deepEqual(list.tasks.map((t) => t.modelId).sort(), ['scripted-large', 'scripted-small']);

  await page.waitForFunction(() => document.querySelectorAll('.compare-col').length === 2);
  await page.waitForFunction(() => document.querySelectorAll('.compare-col [data-status="completed"]').length === 2, null, { timeout: 120000 });
  const cols = await page.$$eval('.compare-col', (els) => els.map((el) => ({
    model: el.querySelector('h2').textContent, result: el.querySelector('.result').textContent,
  })));
  const byModel = Object.fromEntries(cols.map((c) => [c.model, c.result]));
  assert.equal(byModel['scripted-large'], 'The large model did it.');
  assert.equal(byModel['scripted-small'], 'The small model did it.');
  assert.match(await page.textContent('#compare-meta'), /2 tasks on 2 models · 2 finished/);
  assert.ok(await page.isHidden('#compare-cancel'), 'nothing left to cancel');
  await env.done(page);
});
