// Plan-first tasks in the web UI against a real helper and the scripted
// provider: "Planning…" while the model writes the plan, which streams in
// as it is written (cancel interrupts it), the plan panel under review
// (approve, edit in the textarea, which also starts the agent, ask for
// changes in words, which the model rewrites, cancel), the checklist that
// ticks off as the agent calls its todo tool, the reason of a plan that
// failed, and the dashboard's labels, link and history filter.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gate, slow, text, tool } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('plan');

/** Creates a plan-first task through the API; answers it. */
function planTask(description) {
  return env.helper.api('POST', '/api/v1/tasks', { description, planFirst: true });
}

/** No toast reported an error on the page. */
async function noErrorToast(page) {
  assert.equal(await page.locator('#toasts .toast.error').count(), 0, `error toast: ${await page.locator('#toasts').textContent()}`);
}

test('planning, then the plan panel: the edited plan runs at once, with no second approval', { timeout: 120000 }, async () => {
  const { helper, llm } = env;
  const M = '[[edit]]';
  const writing = gate();
  llm.script(M, [
    writing.hold(text('1. Look at the screen.\n2. Say hello.')),
    text('Followed the plan.'),
  ], { success: true, summary: 'Followed the edited plan.' });
  const t = await planTask(`Greet the user ${M}`);
  const page = await env.page(`/tasks/${t.id}`);

  // Planning: its own panel and label, no VM, no instructions.
  await writing.reached;
  await page.waitForSelector('#task-meta [data-status="planning"]');
  assert.equal(await page.textContent('#task-meta [data-status="planning"]'), 'Planning…');
  assert.equal(await page.locator('#planning-card').isVisible(), true);
  assert.equal(await page.locator('#plan-card').isHidden(), true);
  assert.equal(await page.locator('#instruct-panel').isVisible(), false, 'no instructions to an agent that has not started');
  assert.match(await page.textContent('#sb-guest'), /none until the plan is approved/);

  // Review: the model's plan, read-only until Edit.
  writing.release();
  await page.waitForSelector('#plan-card:not([hidden])');
  await page.waitForSelector('#task-meta [data-status="planReview"]');
  assert.equal(await page.locator('#planning-card').isHidden(), true);
  assert.equal(await page.inputValue('#plan-text'), '1. Look at the screen.\n2. Say hello.');
  assert.equal(await page.getAttribute('#plan-text', 'readonly'), '', 'the plan is read-only before Edit');
  assert.equal(await page.locator('#btn-resume').isHidden(), true, 'a plan is approved, not resumed');
  assert.equal(await page.locator('#plan-run-edited').isHidden(), true);

  await page.click('#plan-edit');
  assert.equal(await page.getAttribute('#plan-text', 'readonly'), null, 'Edit makes the plan editable');
  assert.equal(await page.locator('#plan-approve').isHidden(), true, 'while editing, Approve would drop the edits');
  await page.fill('#plan-text', 'Scratch that');
  await page.click('#plan-discard');
  assert.equal(await page.inputValue('#plan-text'), '1. Look at the screen.\n2. Say hello.', 'Discard restores the plan');

  await page.click('#plan-edit');
  await page.fill('#plan-text', '1. Look at the screen.\n2. Say hello in French.');
  // A refresh of the task while editing must not overwrite the edits.
  await page.waitForTimeout(2000); // the page refreshes the task every 1.5 s
  assert.equal(await page.inputValue('#plan-text'), '1. Look at the screen.\n2. Say hello in French.');
  await page.click('#plan-run-edited');
  await page.waitForSelector('#plan-card', { state: 'hidden' });
  await page.waitForSelector('#task-meta [data-status="completed"]', { timeout: 60000 });
  await noErrorToast(page);
  const done = await helper.task(t.id);
  assert.equal(done.planMarkdown, '1. Look at the screen.\n2. Say hello in French.');
  const bodies = llm.bodies(M);
  assert.ok(bodies[1].includes('Follow this plan, which the user approved:') && bodies[1].includes('Say hello in French.'), 'the edited plan reached the agent');
  await env.done(page);
});

test('cancel while planning interrupts the model; cancel under review ends the task', { timeout: 60000 }, async () => {
  const { helper, llm } = env;
  const never = gate(); // the model never answers this plan request
  llm.script('[[slow]]', [never.hold(text('1. Too late.'))]);
  const slow = await planTask('A slow plan [[slow]]');
  const page = await env.page(`/tasks/${slow.id}`);
  page.on('dialog', (d) => d.accept());
  await never.reached;
  await page.waitForSelector('#planning-card:not([hidden])');
  await page.click('#planning-cancel');
  await page.waitForSelector('#task-meta [data-status="cancelled"]', { timeout: 10000 });
  assert.equal((await helper.task(slow.id)).resultSummary, 'Planning cancelled by the user.');

  llm.script('[[drop]]', [text('1. Never run.')]);
  const drop = await planTask('A plan to drop [[drop]]');
  await page.goto(`${helper.base}/tasks/${drop.id}`);
  await page.waitForSelector('#plan-card:not([hidden])');
  await page.click('#plan-cancel');
  await page.waitForSelector('#task-meta [data-status="cancelled"]');
  assert.equal(await page.locator('#plan-card').isHidden(), true);
  await noErrorToast(page);
  await env.done(page);
});

test('a plan that failed shows the reason; the dashboard knows the plan states', { timeout: 60000 }, async () => {
  const { helper, llm } = env;
  llm.script('[[tool]]', [tool('mouse_click', { x: 1, y: 1 })]);
  const failed = await planTask('A plan the model fumbles [[tool]]');
  await helper.waitTask(failed.id, 'planFailed', (t) => t.status === 'planFailed');
  const page = await env.page(`/tasks/${failed.id}`);
  await page.waitForSelector('#plan-failed-card:not([hidden])');
  assert.equal(await page.textContent('#task-meta [data-status="planFailed"]'), 'Plan failed');
  assert.match(await page.textContent('#plan-failed-reason'), /answered the plan request with a tool call \(mouse_click\) instead of a plan/);
  assert.equal(await page.locator('#result').isHidden(), true, 'no agent ran: no result or replay');

  llm.script('[[review]]', [text('1. Wait for review.')]);
  const review = await planTask('A plan under review [[review]]');
  await helper.waitTask(review.id, 'planReview', (t) => t.status === 'planReview');
  await page.goto(`${helper.base}/`);
  const card = page.locator(`article[data-task-id="${review.id}"]`);
  await card.waitFor();
  assert.equal(await card.locator('[data-status="planReview"]').textContent(), 'Plan review');
  assert.equal(await card.locator('a.button', { hasText: 'Review plan' }).getAttribute('href'), `/tasks/${review.id}`);
  assert.equal(await card.locator('button[data-action="pause"]').isDisabled(), true);
  await page.selectOption('#history-status', 'planFailed');
  await page.waitForSelector(`#history [data-task-id="${failed.id}"]`);
  await env.done(page);
});

test('the plan streams as it is written, is rewritten as asked in words, and its checklist ticks off', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  const M = '[[stream-plan]]';
  const first = '1. Open the report in the inbox.\n2. Total the March column.';
  const second = `${first}\n3. Save a chart to the outbox.`;
  const writing = gate();
  const rewriting = gate();
  const ticks = [gate(), gate()];
  llm.script(M, [
    slow(text(first), { paceMs: 20, midway: writing.hold({}) }),
    slow(text(second), { paceMs: 20, midway: rewriting.hold({}) }),
    ticks[0].hold(tool('todo', { action: 'complete', item: 1 })),
    ticks[1].hold(tool('todo', { action: 'complete', item: 2 })),
    tool('todo', { action: 'complete', item: 3 }),
    text('Saved the chart.'),
  ], { success: true, summary: 'Totalled March and saved a chart.' });
  const t = await planTask(`Chart the report ${M}`);
  const page = await env.page(`/tasks/${t.id}`);

  // Half the plan is written: it shows, in the planning card.
  await writing.reached;
  await page.waitForSelector('#planning-card:not([hidden])');
  await page.waitForFunction(() => document.querySelector('#planning-text').textContent.startsWith('1. Open the report'));
  const partial = await page.textContent('#planning-text');
  assert.ok(first.startsWith(partial) && partial.length < first.length, `the plan so far: ${JSON.stringify(partial)}`);
  assert.equal(await page.locator('#plan-card').isHidden(), true);
  assert.equal(await page.locator('#live-answer').isHidden(), true, 'the plan streams in its card, not as an agent answer');
  writing.release();
  await page.waitForSelector('#plan-card:not([hidden])');
  assert.equal(await page.inputValue('#plan-text'), first);

  // Changes asked in words: blank words are not sent; the rewrite streams.
  await page.click('#plan-revise-send');
  await page.locator('.toast', { hasText: 'Say what to change in the plan first.' }).waitFor();
  await page.fill('#plan-revise', 'Also save a chart to the outbox.');
  await page.click('#plan-revise-send');
  await rewriting.reached;
  await page.waitForSelector('#planning-card:not([hidden])');
  assert.equal(await page.textContent('#planning-title'), 'Rewriting the plan…');
  assert.match(await page.textContent('#planning-what'), /as you asked: “Also save a chart to the outbox\.”/);
  await page.waitForFunction(() => document.querySelector('#planning-text').textContent.startsWith('1. Open the report'));
  rewriting.release();
  await page.waitForFunction((want) => document.querySelector('#plan-text').value === want && !document.querySelector('#plan-card').hidden, second);
  assert.equal(await page.inputValue('#plan-revise'), '', 'the words are sent once');
  const sent = llm.bodies(M)[1];
  assert.ok(sent.includes('Also save a chart to the outbox.') && sent.includes('Total the March column.'), 'the model got the plan and the words');

  // Approved: the checklist is the plan's items, ticked off as the agent
  // reports them.
  await page.click('#plan-approve');
  await ticks[0].reached;
  await page.waitForSelector('#checklist-panel:not([hidden])');
  const items = page.locator('#checklist li');
  await page.waitForFunction(() => document.querySelectorAll('#checklist li').length === 3);
  assert.deepEqual(await items.locator('.text').allTextContents(), ['Open the report in the inbox.', 'Total the March column.', 'Save a chart to the outbox.']);
  assert.equal(await page.textContent('#checklist-count'), '0 of 3 done');
  ticks[0].release();
  await page.waitForSelector('#checklist li:nth-child(1)[data-done="true"]');
  assert.equal(await page.textContent('#checklist-count'), '1 of 3 done');
  assert.equal(await page.getAttribute('#checklist li:nth-child(2)', 'data-done'), 'false');
  ticks[1].release();
  await page.waitForSelector('#task-meta [data-status="completed"]', { timeout: 60000 });
  await page.waitForFunction(() => document.querySelector('#checklist-count').textContent === '3 of 3 done');
  assert.deepEqual(await items.evaluateAll((lis) => lis.map((li) => li.dataset.done)), ['true', 'true', 'true']);
  const done = await helper.task(t.id);
  assert.deepEqual(done.todo.map((it) => it.done), [true, true, true]);
  await noErrorToast(page);
  await env.done(page);
});
