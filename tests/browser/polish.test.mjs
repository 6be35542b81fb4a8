// The agent window offers only what fits the task's state (issue 18.6):
// instructions only to a running agent, Cancel only before the end; an
// unknown task's page is a plain not-found page without the task status
// bar; and the same error again does not pile up toasts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gate, text, tool } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('polish');

test('instructions and cancel are offered only while they can act', { timeout: 120000 }, async () => {
  const { helper, llm } = env;
  const M = '[[polish]]';
  const held = gate();
  llm.script(M, [held.hold(tool('wait', { seconds: 0 })), text('Done.')], { success: true, summary: 'Done.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Wait once ${M}` });
  const page = await env.page(`/tasks/${task.id}`);
  await held.reached;
  await page.waitForSelector('#task-meta [data-status="running"]');
  assert.equal(await page.locator('#instruct-panel').isVisible(), true, 'a running agent takes instructions');
  assert.equal(await page.locator('#btn-cancel').isVisible(), true);
  await page.click('#btn-pause');
  await page.waitForSelector('#task-meta [data-status="paused"]');
  assert.equal(await page.locator('#instruct-panel').isVisible(), false, 'a paused agent reads nothing until it resumes');
  await page.click('#btn-resume');
  held.release();
  await helper.waitTask(task.id, 'completion', (t) => t.status === 'completed');
  await page.waitForSelector('#task-meta [data-status="completed"]');
  assert.equal(await page.locator('#instruct-panel').isVisible(), false, 'a finished task takes no instructions');
  assert.equal(await page.locator('#btn-cancel').isVisible(), false, 'a finished task has nothing to cancel');
  await env.done(page);
});

test('an unknown task is a plain not-found page', { timeout: 60000 }, async () => {
  const page = await env.page('/tasks/00000000-no-such-task');
  await page.waitForSelector('text=Task not found');
  assert.equal(await page.locator('footer.statusbar').count(), 0, 'no task status bar without a task');
  await env.done(page);
});

test('the same error again renews its toast instead of piling up', { timeout: 60000 }, async () => {
  const page = await env.page('/');
  const shown = await page.evaluate(async () => {
    const { toast } = await import('/assets/common.js');
    for (let i = 0; i < 5; i++) toast('The helper could not be reached.', 'error');
    for (let i = 0; i < 4; i++) toast(`Other problem ${i}`, 'error');
    return [...document.querySelectorAll('#toasts .toast')].map((t) => t.textContent);
  });
  assert.deepEqual(shown, ['Other problem 1', 'Other problem 2', 'Other problem 3']);
  const again = await page.evaluate(async () => {
    const { toast } = await import('/assets/common.js');
    document.getElementById('toasts').replaceChildren();
    for (let i = 0; i < 5; i++) toast('The helper could not be reached.', 'error');
    return [...document.querySelectorAll('#toasts .toast')].map((t) => t.textContent);
  });
  assert.deepEqual(again, ['The helper could not be reached. (×5)']);
  await env.done(page);
});

test('errors read in the words of the UI, not the API\'s field names', { timeout: 60000 }, async () => {
  const page = await env.page('/');
  const said = await page.evaluate(async () => {
    const { humanize } = await import('/assets/common.js');
    return humanize('templateId "nosuch": no such template; outputDirectory "/etc": a system location; task 1 is timedOut');
  });
  assert.equal(said, 'template "nosuch": no such template; output folder "/etc": a system location; task 1 is timed out');
  await env.done(page);
});
