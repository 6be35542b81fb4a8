// The agent window against a real helper with sandbox guests: a task made
// with the form (files by picker and by drag and drop, a tool permission
// override) runs live to completion and its output downloads; then a
// multiple-choice question, a permission request, pause and resume, and an
// instruction that reaches the next LLM request.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { gate, text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('agent');

/** The colour of the live image's pixel at guest point (gx, gy), as [r, g, b]. */
function livePixel(page, gx, gy) {
  return page.evaluate(([gx, gy]) => {
    const img = document.getElementById('live');
    if (img.hidden || !img.naturalWidth) return null;
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(Math.round((gx * img.naturalWidth) / 1280), Math.round((gy * img.naturalHeight) / 800), 1, 1).data;
    return [d[0], d[1], d[2]];
  }, [gx, gy]);
}

const isBlue = (p) => p && p[2] > 150 && p[0] < 110 && p[1] < 140;

test('a task made with the form runs live in the agent window, completes, and its output downloads', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  const start = gate(); // the first answer waits: the VM is up, the model is "thinking"
  const painted = gate(); // holds the task running until the live screen showed the blue window
  llm.script('[[order]]', [
    start.hold(tool('run_shell', { command: "xterm -bg '#3366cc' -fg white -geometry 200x70+0+0 -e sleep 600 >/dev/null 2>&1 &" })),
    painted.hold(tool('read_file', { path: 'inbox/order.txt' })),
    tool('write_file', { path: 'outbox/receipt.txt', contents: 'Order received: 3 apples\n' }),
    text('I wrote outbox/receipt.txt.'),
  ], { success: true, summary: 'Wrote outbox/receipt.txt for the order in the inbox.' });

  const page = await env.page('/');
  await page.fill('#task-description', 'Process the order in the inbox [[order]]');
  await page.waitForFunction(() => document.getElementById('task-model').value === 'scripted-large');
  await page.setInputFiles('#task-files', { name: 'order.txt', mimeType: 'text/plain', buffer: Buffer.from('3 apples\n') });
  const dropped = await page.evaluateHandle(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(['gift wrap, please\n'], 'note.txt', { type: 'text/plain' }));
    return dt;
  });
  await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer: dropped });
  assert.deepEqual(await page.locator('#file-list li span').allTextContents(), ['order.txt (9 bytes)', 'note.txt (18 bytes)']);
  const outDir = path.join(helper.userHome, 'orders');
  await page.fill('#task-output', outDir);
  await page.click('#advanced summary');
  await page.selectOption('#policy-run_shell', 'allow');
  await page.click('#start-task');

  await page.waitForURL(/\/tasks\/[^/]+$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await page.evaluate(() => { window.sameDocument = true; });
  const created = await helper.task(id);
  assert.deepEqual(created.toolPolicy, { run_shell: 'allow' });
  assert.equal(created.outputDirectory, outDir);
  assert.deepEqual(created.inputFiles.map((f) => f.name).sort(), ['note.txt', 'order.txt']);

  // Running: the live screen shows the guest's (black) desktop, the activity
  // stream has the first screenshot, the status bar names the VM.
  await start.reached;
  await page.waitForSelector('#task-meta [data-status="running"]');
  await eventually('a frame on the live screen', async () => (await livePixel(page, 640, 400)) !== null);
  assert.ok(!isBlue(await livePixel(page, 100, 100)), 'the desktop is not blue before the agent acts');
  await page.waitForSelector('#activity li[data-type="screenshot"]');
  await page.waitForFunction(() => /vm-[0-9a-f]+ connected \(1280×800\)/.test(document.getElementById('sb-guest').textContent));
  const rowsBefore = await page.locator('#activity li').count();

  // The agent opens a blue window: the live screen follows without a reload.
  start.release();
  await eventually('the blue window on the live screen', async () => isBlue(await livePixel(page, 100, 100)), 30000);
  assert.equal(await page.evaluate(() => (/\/stream\?/.test(document.getElementById('live').src))), true, 'the live image is the MJPEG stream');
  await page.waitForSelector('#activity li[data-type="tool_call_result"] >> text=run_shell');
  painted.release();

  await page.waitForSelector('#task-meta [data-status="completed"]', { timeout: 60000 });
  assert.equal(await page.evaluate(() => window.sameDocument), true, 'the page was not reloaded');
  assert.ok(await page.locator('#activity li').count() > rowsBefore + 5, 'the activity stream grew live');
  await page.waitForSelector('#activity li[data-type="status_change"] >> text=Wrote outbox/receipt.txt for the order in the inbox.');
  const types = await page.locator('#activity li').evaluateAll((rows) => rows.map((r) => r.dataset.type));
  assert.equal(types.at(-1), 'status_change', 'the final status is the last event');
  assert.equal(await page.textContent('#result-summary'), 'Wrote outbox/receipt.txt for the order in the inbox.');
  assert.equal(await page.locator('#permission-card').isHidden(), true, 'run_shell was allowed without asking');

  // The model got the input file; the output landed in the chosen folder and downloads.
  assert.ok(llm.bodies('[[order]]').some((b) => b.includes('3 apples')), 'the input file reached the model');
  await eventually('the output in the chosen folder', () => fs.existsSync(path.join(outDir, 'receipt.txt')));
  assert.equal(fs.readFileSync(path.join(outDir, 'receipt.txt'), 'utf8'), 'Order received: 3 apples\n');
  const link = page.locator('#output-files a.file-link', { hasText: 'receipt.txt' });
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  assert.equal(download.suggestedFilename(), 'receipt.txt');
  assert.equal(fs.readFileSync(await download.path(), 'utf8'), 'Order received: 3 apples\n');

  // A step of the activity shows the screen it saw (as the model saw it:
  // the 1280x800 screen at the default cap, 1024x640).
  const step = page.locator('#activity li[data-type="tool_call_result"] .step-link').last();
  const shotURL = await step.getAttribute('data-shot');
  await step.click();
  await page.waitForFunction(() => { const i = document.getElementById('step-shot'); return !i.hidden && i.naturalWidth === 1024; });
  assert.equal(new URL(await page.getAttribute('#step-shot', 'src'), helper.base).pathname, shotURL);
  assert.match(shotURL, /\/api\/v1\/tasks\/[^/]+\/screenshots\/\d+$/);
  await page.click('#back-to-live');
  assert.equal(await page.locator('#step-shot').isHidden(), true);
  await env.done(page);
});

test('text and multiple-choice questions, permissions, pause and resume, and instructions from the agent window', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  const pausedGate = gate();
  const instructGate = gate();
  const M = '[[control]]';
  llm.script(M, [
    tool('ask_text_question', { question: 'Who is the report for?' }),
    tool('ask_multiple_choice', { question: 'Which report should I prepare?', options: ['Q1 summary', 'Q2 summary', 'Both'] }),
    tool('run_shell', { command: 'echo approved > outbox/shell.txt && echo shell-ran' }),
    pausedGate.hold(tool('wait', { seconds: 0.1 })),
    instructGate.hold(tool('wait', { seconds: 0.1 })),
    text('All done.'),
  ], { success: true, summary: 'Prepared the Q2 summary.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Prepare the quarterly report ${M}` });
  // A short window: the activity stream scrolls.
  const page = await env.page(`/tasks/${task.id}`, { viewport: { width: 1280, height: 560 } });

  // A text question: a text answer.
  await page.waitForSelector('#question-form:not([hidden])', { timeout: 60000 });
  assert.equal(await page.textContent('#question-text'), 'Who is the report for?');
  await page.fill('#question-answer', 'The board');
  await page.click('#question-form button[type=submit]');
  assert.ok((await llm.waitFor(M, 2))[1].includes('The user answered: The board'), 'the text answer reached the model');

  // A multiple-choice question: one button per option.
  await page.waitForSelector('#question-choices:not([hidden]) button');
  assert.equal(await page.textContent('#question-text'), 'Which report should I prepare?');
  assert.deepEqual(await page.locator('#question-choices button').allTextContents(), ['Q1 summary', 'Q2 summary', 'Both']);
  await page.click('#question-choices button:has-text("Q2 summary")');
  await page.waitForSelector('#question-card', { state: 'hidden' });
  const afterAnswer = await llm.waitFor(M, 3);
  assert.ok(afterAnswer[2].includes('The user answered: Q2 summary'), 'the answer reached the model');

  // run_shell asks by default: approve it.
  await page.waitForSelector('#permission-card:not([hidden])');
  assert.equal(await page.textContent('#permission-tool'), 'run_shell');
  assert.match(await page.textContent('#permission-details'), /echo approved > outbox\/shell.txt/);
  await page.click('#permission-approve');
  await page.waitForSelector('#permission-card', { state: 'hidden' });
  const afterShell = await llm.waitFor(M, 4);
  assert.match(afterShell[3], /shell-ran/, 'the approved command ran');

  // The stream follows the newest event until the user scrolls up; then
  // new events wait behind a "jump to latest" button.
  await pausedGate.reached;
  const scroll = () => page.evaluate(() => {
    const a = document.getElementById('activity');
    return { top: a.scrollTop, bottom: a.scrollHeight - a.clientHeight, rows: a.children.length };
  });
  let pos = await scroll();
  assert.ok(pos.bottom > 0 && pos.top >= pos.bottom - 2, `pinned to the bottom: ${JSON.stringify(pos)}`);
  await page.evaluate(() => { document.getElementById('activity').scrollTop = 0; });
  await page.waitForFunction(() => document.getElementById('activity').scrollTop === 0);

  // Pause while the model thinks: its next action is not made, and no
  // request follows until Resume.
  await page.click('#btn-pause');
  await page.waitForSelector('#task-meta [data-status="paused"]');
  assert.equal(await page.locator('#btn-resume').isVisible(), true);
  pausedGate.release();
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(llm.bodies(M).length, 4, 'no LLM request while paused');
  assert.equal((await helper.task(task.id)).status, 'paused');
  await page.click('#btn-resume');
  await page.waitForSelector('#task-meta [data-status="running"]');
  await page.waitForSelector('#jump-latest:not([hidden])');
  pos = await scroll();
  assert.equal(pos.top, 0, 'a user who scrolled up stays where they are');
  await page.click('#jump-latest');
  await page.waitForSelector('#jump-latest', { state: 'hidden' });
  pos = await scroll();
  assert.ok(pos.top >= pos.bottom - 2, `back at the bottom: ${JSON.stringify(pos)}`);
  const resumed = await llm.waitFor(M, 5);
  assert.match(resumed[4], /the user paused the agent before this action/, 'the paused action was not made');

  // An instruction while the agent runs reaches the next LLM request.
  await instructGate.reached;
  await page.fill('#instruction', 'Use the Q2 numbers only.');
  await page.click('#send-instruction');
  await page.waitForSelector('#toasts >> text=Sent to the agent.');
  assert.equal(await page.inputValue('#instruction'), '');
  instructGate.release();
  const later = await llm.waitFor(M, 6);
  assert.ok(later[5].includes('New instructions from the user: Use the Q2 numbers only.'), 'the instruction is in the next request');
  await page.waitForSelector('#activity li >> text=Instructions from the user: Use the Q2 numbers only.');
  pos = await scroll();
  assert.ok(pos.top >= pos.bottom - 2, `still following the newest events: ${JSON.stringify(pos)}`);

  await page.waitForSelector('#task-meta [data-status="completed"]', { timeout: 60000 });
  assert.equal(await page.textContent('#result-summary'), 'Prepared the Q2 summary.');
  await page.waitForSelector('#output-files a.file-link:has-text("shell.txt")');
  assert.match(await page.textContent('#sb-tokens'), /^[1-9][\d,]*$/);
  await env.done(page);
});

test('plan first: the plan is shown, edited and approved in the agent window, and the agent follows it', { timeout: 120000 }, async () => {
  const { helper, llm } = env;
  const M = '[[plan]]';
  llm.script(M, [
    text('1. Look at the screen.\n2. Say hello.'),
    text('Followed the plan.'),
  ], { success: true, summary: 'Followed the edited plan.' });
  const page = await env.page('/');
  await page.fill('#task-description', `Greet the user ${M}`);
  await page.click('#advanced summary');
  await page.check('#task-plan-first');
  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[^/]+$/);
  await page.waitForSelector('#plan-card:not([hidden])', { timeout: 60000 });
  assert.equal(await page.inputValue('#plan-text'), '1. Look at the screen.\n2. Say hello.');
  assert.equal(await page.locator('#btn-resume').isHidden(), true, 'a plan is approved, not resumed');
  await page.click('#plan-edit');
  await page.fill('#plan-text', '1. Look at the screen.\n2. Say hello in French.');
  await page.click('#plan-run-edited');
  await page.waitForSelector('#plan-card', { state: 'hidden' });
  await page.waitForSelector('#task-meta [data-status="completed"]', { timeout: 60000 });
  const bodies = llm.bodies(M);
  assert.ok(bodies[1].includes('Follow this plan, which the user approved:') && bodies[1].includes('Say hello in French.'), 'the edited plan reached the agent');
  await env.done(page);
});
