// Presets and the dashboard's "Waiting for you" strip (issue 20): the
// new-task form (with a file and a limit) is saved as a preset and started
// from the dashboard's preset list; a finished task is saved as a preset
// from its page; a task's question shows in the strip until answered; and
// today's tokens and cost per model are shown.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('presets');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-presets-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const api = (method, p, body) => env.helper.api(method, `/api/v1${p}`, body);

test('the form is saved as a preset and started from the dashboard; a finished task is saved as one', { timeout: 150000 }, async () => {
  const { llm } = env;
  const M = '[[preset-notes]]';
  llm.script(M, [tool('read_file', { path: 'inbox/notes.txt' }), text('Read them.')], { success: true, summary: 'Summarised the notes.' });
  const notes = path.join(tmp, 'notes.txt');
  fs.writeFileSync(notes, 'the preset file says hello\n');

  const page = await env.page('/');
  await page.waitForSelector('#no-presets:not([hidden])');
  await page.fill('#task-description', `Summarise notes.txt ${M}`);
  await page.setInputFiles('#task-files', notes);
  await page.click('#advanced summary');
  await page.fill('#task-timeout', '9');
  await page.click('#save-preset');
  await page.fill('#preset-name', 'Notes summary');
  await page.click('#preset-save-confirm');
  const row = page.locator('#presets li[data-preset="Notes summary"]');
  await row.waitFor();
  assert.match(await row.textContent(), /Summarise notes\.txt.*1 file/);
  const [saved] = (await api('GET', '/presets')).presets;
  assert.equal(saved.task.timeoutMinutes, 9);
  assert.deepEqual(saved.inputFiles.map((f) => f.name), ['notes.txt']);
  // A second preset of the same name is refused in words.
  await page.click('#save-preset');
  await page.fill('#preset-name', 'notes SUMMARY');
  await page.click('#preset-save-confirm');
  await page.locator('.toast.error', { hasText: 'exists already' }).waitFor();
  await page.click('#preset-save-cancel');

  // Started from the list: the task has the preset's name, limit and file,
  // and its agent read the file in the VM.
  await row.locator('button:has-text("Start")').click();
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  const done = await env.helper.waitTask(id, 'the preset task', (t) => t.status === 'completed', 90000);
  assert.equal(done.title, 'Notes summary');
  assert.equal(done.timeoutMinutes, 9);
  assert.match((await llm.waitFor(M, 2))[1], /the preset file says hello/, 'the agent read the preset\'s file');

  // The finished task's page saves it as another preset.
  await page.waitForSelector('#result:not([hidden])');
  await page.click('#result #save-preset');
  assert.equal(await page.inputValue('#preset-name'), 'Notes summary');
  await page.fill('#preset-name', 'Notes again');
  await page.click('#preset-form button[type=submit]');
  await page.locator('.toast', { hasText: 'Saved the preset “Notes again”' }).waitFor();
  const again = (await api('GET', '/presets')).presets.find((p) => p.name === 'Notes again');
  assert.ok(again, 'the preset from the task is listed');
  assert.deepEqual(again.inputFiles.map((f) => f.name), ['notes.txt']);
  assert.equal(again.task.timeoutMinutes, 9);

  // Deleted from the dashboard.
  await page.goto(`${env.helper.base}/`);
  page.once('dialog', (d) => d.accept());
  await page.locator('#presets li[data-preset="Notes again"] button:has-text("Delete")').click();
  await page.locator('#presets li[data-preset="Notes again"]').waitFor({ state: 'detached' });
  assert.deepEqual((await api('GET', '/presets')).presets.map((p) => p.name), ['Notes summary']);
  await env.done(page);
});

test('the dashboard shows what waits for the user, and today\'s tokens and cost per model', { timeout: 120000 }, async () => {
  const { llm } = env;
  const M = '[[attention]]';
  llm.script(M, [tool('ask_text_question', { question: 'Which quarter?' }), text('Done.')], { success: true, summary: 'Reported Q3.' });
  const page = await env.page('/');
  const task = await api('POST', '/tasks', { description: `Write the quarterly report ${M}` });
  const item = page.locator(`#attention-list li[data-task-id="${task.id}"]`);
  await item.waitFor({ timeout: 60000 });
  assert.match(await item.textContent(), /Write the quarterly report.*asks: Which quarter\?.*Answer/);
  assert.equal(await page.locator('#attention-empty').isVisible(), false);

  const q = await eventually('the question', async () => (await api('GET', `/tasks/${task.id}`)).pendingQuestion);
  await api('POST', `/tasks/${task.id}/question/answer`, { questionId: q.id, answer: 'Q3' });
  await item.waitFor({ state: 'detached', timeout: 30000 });
  await env.helper.waitTask(task.id, 'the end', (t) => t.status === 'completed', 60000);
  await page.locator('#attention-empty').waitFor();

  // Today's usage: the scripted provider reports 1000 prompt tokens a request.
  const usage = await api('GET', '/usage');
  assert.ok(usage.total.tasks >= 1 && usage.total.totalTokens > 0, JSON.stringify(usage));
  await eventually('the usage line', async () => (await page.textContent('#usage-today')).includes(`${new Intl.NumberFormat('en-US').format(usage.total.totalTokens)} tokens`), 20000);
  await page.click('#usage-details summary');
  const cells = await page.locator('#usage-rows tr').first().locator('th, td').allTextContents();
  assert.equal(cells[0], 'Scripted · scripted-large');
  assert.equal(cells[1], String(usage.models[0].tasks));
  await env.done(page);
});
