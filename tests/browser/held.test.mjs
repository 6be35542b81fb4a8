// A task the system holds offers, in the agent window, what makes it go
// on: more steps for a task at its step limit, a higher budget for one at
// its budget. Each is a real helper and sandbox; the scripted provider
// records what the model was told.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('held');

test('a task at its step limit is continued with more steps from the agent window', { timeout: 120000 }, async () => {
  const { helper, llm } = env;
  await helper.api('PATCH', '/api/v1/settings', { limitGraceMinutes: 5 });
  const M = '[[held-limit]]';
  llm.script(M, [tool('wait', { seconds: 0 }), tool('wait', { seconds: 0 }), text('Both waits are done.')], { success: true, summary: 'Waited twice.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Wait twice ${M}`, maxIterations: 1 });
  const page = await env.page(`/tasks/${task.id}`);
  await page.waitForSelector('#limit-card:not([hidden])', { timeout: 60000 });
  assert.match(await page.textContent('#limit-reason'), /reached its limit of 1 steps/);
  assert.equal(await page.inputValue('#limit-steps'), '1', 'the suggestion is the limit again');
  assert.equal(await page.locator('#budget-card').isVisible(), false);
  await page.fill('#limit-steps', '3');
  await page.click('#limit-continue');
  await page.waitForSelector('#limit-card', { state: 'hidden' });
  const done = await helper.waitTask(task.id, 'completion', (t) => t.status === 'completed');
  assert.equal(done.stepCount, 3);
  assert.ok(llm.bodies(M).some((b) => b.includes('you have 3 more steps')), 'the model was told of its new limit');
  await env.done(page);
});

test('a task at its budget is raised and resumed from the agent window', { timeout: 120000 }, async () => {
  const { helper, llm } = env;
  const M = '[[held-budget]]';
  // Each answer of the scripted provider counts 1020 tokens; the task's
  // title stays its description's start (no title request), so the agent's
  // answers are all it uses.
  await helper.api('PATCH', '/api/v1/settings', { titleFromDescription: true });
  llm.script(M, [tool('wait', { seconds: 0 }), text('Done within the new budget.')], { success: true, summary: 'Finished.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Spend tokens ${M}`, budgetTokens: 500 });
  const page = await env.page(`/tasks/${task.id}`);
  await page.waitForSelector('#budget-card:not([hidden])', { timeout: 60000 });
  assert.match(await page.textContent('#budget-reason'), /token budget reached: 1020 of 500 tokens used/);
  assert.equal(await page.inputValue('#budget-tokens'), '2040', 'the suggestion is twice what was used');
  assert.equal(await page.inputValue('#budget-usd'), '', 'the other budget is left alone');
  await page.fill('#budget-tokens', '100000');
  await page.click('#budget-raise');
  await page.waitForSelector('#budget-card', { state: 'hidden' });
  const done = await helper.waitTask(task.id, 'completion', (t) => t.status === 'completed');
  assert.equal(done.budgetTokens, 100000);
  await env.done(page);
});
