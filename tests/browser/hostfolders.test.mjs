// Host folders in the web UI (issue 20): a folder given in the new-task
// form; the agent (in a real sandbox) edits a text file, replaces an image,
// adds a file and deletes one; the agent window's review shows the text
// diff, the image before and after, and a file the user changed meanwhile
// as a conflict that cannot be approved; approving one change writes it to
// the folder, discarding the rest leaves the folder as it was.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('hostfolders');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-folders-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// Two 1×1 PNGs.
const RED = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const GREY = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

test('changes to a host folder are reviewed in the agent window before they are written', { timeout: 180000 }, async () => {
  const { llm } = env;
  const dir = path.join(tmp, 'project');
  fs.mkdirSync(dir);
  const files = { 'notes.txt': 'alpha\nbeta\n', 'old.txt': 'to delete\n', 'mine.txt': 'the user\'s\n' };
  for (const [name, data] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), data);
  fs.writeFileSync(path.join(dir, 'logo.png'), Buffer.from(RED, 'base64'));

  const M = '[[folders]]';
  llm.script(M, [
    // A line with a terminal escape and a right-to-left override, as a
    // hostile guest would write to hide what it is.
    tool('write_file', { path: 'folders/project/notes.txt', contents: 'alpha\nbeta, edited\n\x1b[2Kok \u202etxt.exe\n' }),
    tool('write_file', { path: 'folders/project/new.txt', contents: 'new file\n' }),
    tool('write_file', { path: 'folders/project/mine.txt', contents: 'the agent\'s\n' }),
    tool('run_shell', { command: `cd /mnt/shared/folders/project && rm old.txt && echo ${GREY} | base64 -d > logo.png` }),
    text('Done.'),
  ], { success: true, summary: 'Edited the project.' });

  const page = await env.page('/');
  await page.fill('#task-description', `Tidy the project ${M}`);
  await page.click('#advanced summary');
  await page.fill('#task-folders', dir);
  await page.selectOption('#policy-run_shell', 'allow');
  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await env.helper.waitTask(id, 'the review', (t) => t.status === 'writebackReview', 120000);
  // Meanwhile the user changes mine.txt, then comes back to the window.
  fs.writeFileSync(path.join(dir, 'mine.txt'), 'the user, again\n');
  await page.evaluate(() => window.dispatchEvent(new Event('focus')));

  await page.waitForSelector('#review:not([hidden])', { timeout: 30000 });
  assert.equal(await page.textContent('#task-meta .badge'), 'Changes to review');
  const item = (p) => page.locator(`#review-items li[data-change="${p}"]`);
  const listed = await page.locator('#review-items li').evaluateAll((els) => els.map((el) => el.dataset.change));
  assert.deepEqual(listed.sort(), ['logo.png', 'mine.txt', 'new.txt', 'notes.txt', 'old.txt'], 'the review lists the five changes');
  assert.match(await item('notes.txt').textContent(), /Changed/);
  const diff = item('notes.txt').locator('pre.diff');
  assert.match(await diff.locator('.add').first().textContent(), /^\+beta, edited$/);
  assert.match(await diff.locator('.del').first().textContent(), /^-beta$/);
  // The guest's control and invisible characters are shown, marked.
  assert.deepEqual(await diff.locator('.hidden-char').allTextContents(), ['\\x1b', '\\u202e']);
  assert.ok(!/[\x00-\x08\x0b-\x1f\u202e]/.test(await diff.textContent()), 'no raw control character in the diff');
  assert.match(await item('new.txt').textContent(), /Added/);
  assert.match(await item('old.txt').textContent(), /Deleted/);
  // The image, before and after, loaded.
  for (const alt of ['logo.png before', 'logo.png after']) {
    const img = item('logo.png').locator(`img[alt="${alt}"]`);
    await eventually(`${alt} loaded`, () => img.evaluate((el) => el.complete && el.naturalWidth === 1));
  }
  // The conflict: shown, and its Approve is off.
  assert.match(await item('mine.txt').locator('.why').textContent(), /Conflict: mine\.txt changed on this computer/);
  assert.equal(await item('mine.txt').locator('button', { hasText: 'Approve' }).isDisabled(), true);
  assert.equal(await item('mine.txt').locator('details pre').textContent(), "the agent's\n", "the agent's version is there to read");

  // Approve one file: it is written, the rest still waits.
  await item('notes.txt').locator('button', { hasText: 'Approve' }).click();
  await item('notes.txt').locator('.done', { hasText: 'applied' }).waitFor();
  assert.equal(fs.readFileSync(path.join(dir, 'notes.txt'), 'utf8'), 'alpha\nbeta, edited\n\x1b[2Kok \u202etxt.exe\n');
  assert.match(await page.textContent('#review-status'), /^4 of 5 waiting/);

  // Discard the rest: the folder stays as it was.
  page.once('dialog', (d) => d.accept());
  await page.click('#review-discard-all');
  await page.waitForSelector('#review', { state: 'hidden' });
  await page.waitForSelector('#task-meta [data-status="completed"]');
  assert.match(await page.textContent('#result-summary'), /1 written to the host, 4 discarded/);
  assert.equal(fs.readFileSync(path.join(dir, 'old.txt'), 'utf8'), 'to delete\n');
  assert.equal(fs.readFileSync(path.join(dir, 'mine.txt'), 'utf8'), 'the user, again\n');
  assert.deepEqual(fs.readFileSync(path.join(dir, 'logo.png')), Buffer.from(RED, 'base64'));
  assert.equal(fs.existsSync(path.join(dir, 'new.txt')), false);
  await env.done(page);
});
