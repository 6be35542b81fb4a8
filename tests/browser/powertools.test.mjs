// Power tools in the web UI (issue 19): skills written, edited, turned off,
// imported and removed in Settings; @-mention completion in the new-task
// form and "Save as skill" on a finished task; an MCP server (a real stdio
// server) added, checked, allowed in the policy editor, used by a task with
// its secret environment, and removed with its permission; web search's
// backend and write-only key; and the agent window's subagent list.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, after, test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from './lib/helper.mjs';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('powertools');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-power-'));
let fakeMCP = '';

before(async () => {
  fakeMCP = path.join(tmp, 'fake-mcp');
  await promisify(execFile)('go', ['build', '-o', fakeMCP, './tests/mcptest/fake-mcp'], { cwd: ROOT });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const api = (method, p, body) => env.helper.api(method, `/api/v1${p}`, body);

test('skills are written, edited, turned off, imported and removed in Settings', { timeout: 60000 }, async () => {
  const page = await env.page('/settings#skills');
  await page.waitForSelector('text=No skills yet');
  await page.click('#add-skill-box summary');
  await page.fill('#new-skill-name', 'csv-report');
  await page.fill('#new-skill-description', 'Turn a CSV into a one-page report.');
  await page.fill('#new-skill-instructions', 'Total each column, then write report.md.');
  await page.click('#add-skill button[type=submit]');
  const card = page.locator('[data-skill="csv-report"]');
  await card.waitFor();
  assert.match(await card.textContent(), /@csv-report.*Turn a CSV into a one-page report\./);

  await card.locator('button:has-text("Edit")').click();
  assert.equal(await page.inputValue('#edit-skill-csv-report-instructions'), 'Total each column, then write report.md.');
  await page.fill('#edit-skill-csv-report-description', 'Turn a CSV into a report with totals.');
  await card.locator('button:has-text("Save skill")').click();
  await eventually('the edit saved', async () => (await api('GET', '/skills/csv-report')).description === 'Turn a CSV into a report with totals.');

  await card.locator('input[type=checkbox]').uncheck();
  await page.locator('[data-skill="csv-report"] .badge', { hasText: 'off' }).waitFor();
  assert.equal((await api('GET', '/skills/csv-report')).isEnabled, false);
  await page.locator('[data-skill="csv-report"] input[type=checkbox]').check();
  await eventually('turned on again', async () => (await api('GET', '/skills/csv-report')).isEnabled);

  // Imported from a folder of this computer; a folder without a SKILL.md is refused in words.
  const dir = path.join(tmp, 'weekly-summary');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'SKILL.md'), '---\nname: weekly-summary\ndescription: Summarise the week.\n---\n\nRead the calendar.\n');
  fs.writeFileSync(path.join(dir, 'template.md'), '# Week\n');
  await page.click('#import-skill-box summary');
  await page.fill('#import-skill-source', path.join(tmp, 'nothing-here'));
  await page.click('#import-skill button[type=submit]');
  await page.locator('.toast.error', { hasText: 'no readable SKILL.md' }).waitFor();
  await page.fill('#import-skill-source', dir);
  await page.click('#import-skill button[type=submit]');
  await page.locator('[data-skill="weekly-summary"]').waitFor();

  page.once('dialog', (d) => d.accept());
  await page.locator('[data-skill="weekly-summary"] button:has-text("Remove")').click();
  await page.locator('[data-skill="weekly-summary"]').waitFor({ state: 'detached' });
  assert.deepEqual((await api('GET', '/skills')).skills.map((s) => s.name), ['csv-report']);
  await env.done(page);
});

test('@-mentions complete a skill into a task, and a finished task is saved as a skill', { timeout: 120000 }, async () => {
  const { llm } = env;
  await api('POST', '/skills', { name: 'invoice-sort', description: 'Sort invoices by their date.', instructions: 'Sort by the date field [[invoice-instructions]].' });
  const page = await env.page('/');
  const ta = page.locator('#task-description');
  await ta.waitFor();
  await ta.click();
  // Skills load with the form; type once they have.
  await eventually('the skills loaded', async () => {
    await ta.fill('');
    await page.keyboard.type('Tidy the inbox with @inv');
    return page.isVisible('#skill-suggestions li[data-skill="invoice-sort"]');
  });
  assert.equal(await ta.getAttribute('aria-expanded'), 'true');
  assert.equal(await ta.getAttribute('aria-activedescendant'), 'skill-opt-0');
  assert.match(await page.textContent('#skill-suggestions'), /@invoice-sort Sort invoices by their date\./);
  await page.keyboard.press('Enter');
  assert.equal(await ta.inputValue(), 'Tidy the inbox with @invoice-sort ');
  assert.equal(await page.isHidden('#skill-suggestions'), true);
  assert.equal(await page.textContent('#skill-hint'), 'The agent starts with the instructions of @invoice-sort.');
  // Escape closes the list without choosing.
  await page.keyboard.type('and @c');
  await page.waitForSelector('#skill-suggestions li[data-skill="csv-report"]');
  await page.keyboard.press('Escape');
  assert.equal(await page.isHidden('#skill-suggestions'), true);
  assert.equal(await ta.inputValue(), 'Tidy the inbox with @invoice-sort and @c');

  const M = '[[mention]]';
  llm.script(M, [text('Sorted them.')], { success: true, summary: 'Sorted 12 invoices by date.' });
  await page.keyboard.type(` ${M}`);
  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  await env.helper.waitTask(id, 'completion', (t) => t.status === 'completed');
  assert.ok(llm.bodies(M)[0].includes('[[invoice-instructions]]'), "the mentioned skill's instructions reached the model");
  assert.ok(!llm.bodies(M)[0].includes('Total each column'), 'a skill not mentioned was not given whole');

  // Save as skill: a draft to edit, then saved under a new name.
  await page.waitForSelector('#result:not([hidden])');
  await page.click('#save-skill');
  await page.waitForSelector('#skill-draft:not([hidden])');
  assert.equal(await page.getAttribute('#save-skill', 'aria-expanded'), 'true');
  assert.ok((await page.inputValue('#skill-name')).length > 0);
  assert.match(await page.inputValue('#skill-instructions'), /Sorted 12 invoices by date\./);
  await page.fill('#skill-name', 'tidy-inbox');
  await page.click('#skill-draft button[type=submit]');
  await page.locator('.toast', { hasText: 'Saved the skill @tidy-inbox' }).waitFor();
  assert.equal(await page.isHidden('#skill-draft'), true);
  assert.match((await api('GET', '/skills/tidy-inbox')).instructions, /Sorted 12 invoices by date\./);
  // The same name again is refused in words, and the form stays.
  await page.click('#save-skill');
  await page.waitForSelector('#skill-draft:not([hidden])');
  await page.fill('#skill-name', 'tidy-inbox');
  await page.click('#skill-draft button[type=submit]');
  await page.locator('.toast.error', { hasText: 'a skill named tidy-inbox exists already' }).waitFor();
  assert.equal(await page.isVisible('#skill-draft'), true);
  // Its description quotes the task, marker and all: every later task is
  // told of it, so it goes before the next test's scripts.
  await api('DELETE', '/skills/tidy-inbox');
  await env.done(page);
});

test('an MCP server is added, checked, allowed, used by a task and removed in Settings', { timeout: 120000 }, async () => {
  const { llm } = env;
  const SECRET = 'tag-from-settings';
  const page = await env.page('/settings#mcp');
  await page.waitForSelector('text=No MCP servers yet.');
  // A permission being chosen, not saved yet, outlives the policy editor's
  // new line for the server.
  await page.waitForSelector('#sp-run_shell');
  const shell = await page.inputValue('#sp-run_shell');
  const pending = shell === 'deny' ? 'ask' : 'deny';
  await page.selectOption('#sp-run_shell', pending);
  await page.click('#add-mcp-box summary');
  await page.fill('#new-mcp-name', 'records');
  await page.fill('#new-mcp-command', fakeMCP);
  await page.fill('#new-mcp-env', `FAKE_MCP_TAG=${SECRET}`);
  await page.fill('#new-mcp-timeout', '10');
  await page.click('#add-mcp button[type=submit]');
  const card = page.locator('[data-mcp="records"]');
  await card.waitFor();
  assert.match(await card.textContent(), /tools ask each time · 10 s a call · secrets: FAKE_MCP_TAG/);
  assert.ok(!(await page.content()).includes(SECRET), 'the value is not in the page');
  assert.ok(!JSON.stringify(await api('GET', '/mcp-servers')).includes(SECRET));
  await page.waitForSelector('select[data-tool="mcp__records__*"]');
  assert.equal(await page.inputValue('#sp-run_shell'), pending, 'the unsaved choice is kept');
  await page.selectOption('#sp-run_shell', shell);

  await card.locator('button:has-text("Check")').click();
  await card.locator('.test-result.ok').waitFor({ timeout: 30000 });
  const checked = await card.locator('.test-result').textContent();
  assert.match(checked, /Works: 4 tools/);
  assert.match(checked, /mcp__records__lookup/);

  // The policy editor has a line for its tools, at the server's own permission.
  const perm = page.locator('select[data-tool="mcp__records__*"]');
  assert.equal(await perm.inputValue(), '');
  assert.equal(await perm.locator('option:checked').textContent(), "the server's: ask");
  await perm.selectOption('allow');
  await page.click('#safety-form button[type=submit]');
  await eventually('the policy saved', async () => (await api('GET', '/settings')).toolPolicy['mcp__records__*'] === 'allow');

  // A task calls it without asking, and its environment reached the server.
  const M = '[[mcp]]';
  llm.script(M, [tool('mcp__records__lookup', { key: 'abc' }), text('Found it.')], { success: true, summary: 'Found the record.' });
  const task = await api('POST', '/tasks', { description: `Look up abc ${M}` });
  await env.helper.waitTask(task.id, 'completion', (t) => t.status === 'completed');
  assert.ok(llm.bodies(M).some((b) => b.includes(`record abc: shelf 21 (tag ${SECRET})`)), 'the tool answered the model');

  await card.locator('button:has-text("Turn off")').click();
  await page.locator('[data-mcp="records"] .badge', { hasText: 'off' }).waitFor();
  assert.equal((await api('GET', '/mcp-servers')).servers[0].enabled, false);

  page.once('dialog', (d) => d.accept());
  await page.locator('[data-mcp="records"] button:has-text("Remove")').click();
  await page.waitForSelector('text=No MCP servers yet.');
  await perm.waitFor({ state: 'detached' });
  assert.equal((await api('GET', '/settings')).toolPolicy['mcp__records__*'], undefined, 'its permission went with it');
  await env.done(page);
});

test("web search: Brave's key is stored and never shown; SearXNG needs its address", { timeout: 60000 }, async () => {
  const KEY = 'brave-key-for-the-test';
  const page = await env.page('/settings#web-search');
  await page.waitForSelector('#ws-backend');
  assert.equal(await page.inputValue('#ws-backend'), '');
  assert.equal(await page.isHidden('#ws-url-field'), true);
  await page.selectOption('#ws-backend', 'brave');
  assert.equal(await page.isVisible('#ws-key-field'), true);
  assert.equal(await page.getAttribute('#ws-key', 'type'), 'password');
  await page.fill('#ws-key', KEY);
  await page.click('#web-search-form button[type=submit]');
  await page.locator('.toast', { hasText: 'Web search saved.' }).waitFor();
  const ws = await api('GET', '/web-search');
  assert.deepEqual([ws.backend, ws.hasApiKey], ['brave', true]);
  assert.ok(!JSON.stringify(ws).includes(KEY));
  assert.equal(await page.inputValue('#ws-key'), '', 'the key is not left in the page');
  assert.equal(await page.textContent('#ws-status'), 'Key stored.');
  assert.ok(!(await page.content()).includes(KEY));

  await page.selectOption('#ws-backend', 'searxng');
  assert.equal(await page.isHidden('#ws-key-field'), true);
  await page.click('#web-search-form button[type=submit]');
  await page.locator('.toast.error', { hasText: 'SearXNG needs its address' }).waitFor();
  assert.equal((await api('GET', '/settings')).webSearchBackend, 'brave', 'nothing half-saved');
  await page.fill('#ws-url', 'http://127.0.0.1:8888');
  await page.click('#web-search-form button[type=submit]');
  await eventually('SearXNG saved', async () => (await api('GET', '/settings')).webSearchBackend === 'searxng');
  await env.done(page);
});

test('the agent window lists its subagents and links a subagent to its parent', { timeout: 180000 }, async () => {
  const { llm } = env;
  const P = '[[parent]]';
  const C = '[[child]]';
  // The parent's requests hold the child's marker too (in its tool call),
  // so the parent's script is set first: the first marker found wins.
  llm.script(P, [tool('spawn_subagent', { task: `Count the files ${C}` }), text('Waiting for the count.')], { success: true, summary: 'Delegated.' });
  llm.script(C, [text('There are 3 files.')], { success: true, summary: 'Counted 3 files.' });
  const task = await api('POST', '/tasks', { description: `Delegate the count ${P}` });
  const page = await env.page(`/tasks/${task.id}`);
  const item = page.locator('#subagents li');
  await item.waitFor({ timeout: 90000 });
  assert.equal(await page.isVisible('#subagents-panel'), true);
  assert.equal(await item.locator('a').textContent(), `Subagent: Count the files ${C}`);
  await env.helper.waitTask(task.id, 'completion', (t) => t.status === 'completed', 150000);
  const parent = await api('GET', `/tasks/${task.id}`);
  assert.equal(parent.subagents.length, 1);
  const child = parent.subagents[0];
  await page.locator(`[data-subagent="${child.id}"] [data-status="completed"]`).waitFor();
  await item.locator('a').click();
  await page.waitForURL(`**/tasks/${child.id}`);
  await page.waitForSelector('#parent-link');
  assert.equal(await page.getAttribute('#parent-link', 'href'), `/tasks/${task.id}`);
  assert.equal(await page.isHidden('#subagents-panel'), true, 'a subagent without children has no list');
  await env.done(page);
});

test('a research subagent runs on the worker model set in Settings, and its window has no screen to show or take over', { timeout: 180000 }, async () => {
  const { llm } = env;
  // The worker model, set in Settings › Task defaults.
  const settings = await env.page('/settings#task-defaults');
  await settings.locator('#worker-providers option[value="Scripted"]').waitFor({ state: 'attached' });
  await settings.fill('#s-workerProviderName', 'Scripted');
  await settings.fill('#s-workerModelId', 'scripted-small');
  await settings.locator('#task-defaults button[type="submit"]').click();
  await eventually('the worker model saved', async () => {
    const s = await api('GET', '/settings');
    return `${s.workerProviderName}/${s.workerModelId}` === 'Scripted/scripted-small';
  });
  await env.done(settings);

  const P = '[[research parent]]';
  const C = '[[research child]]';
  llm.script(P, [tool('spawn_subagent', { task: `Look up the tide ${C}`, domain: 'host' }), tool('await_subagents', { timeoutSeconds: 60 }), text('Done.')], { success: true, summary: 'Delegated.' });
  llm.script(C, [text('It turns at 14:05.')], { success: true, summary: 'The tide turns at 14:05.' });
  try {
    const task = await api('POST', '/tasks', { description: `Delegate the research ${P}` });
    const page = await env.page(`/tasks/${task.id}`);
    const item = page.locator('#subagents li');
    await item.waitFor({ timeout: 90000 });
    assert.match(await item.textContent(), /research, on the host/);
    await env.helper.waitTask(task.id, 'completion', (t) => t.status === 'completed', 150000);
    const child = (await api('GET', `/tasks/${task.id}`)).subagents[0];
    assert.equal(child.domain, 'host');
    const kid = await api('GET', `/tasks/${child.id}`);
    assert.equal(`${kid.providerName}/${kid.modelId}/${kid.subagentDomain}`, 'Scripted/scripted-small/host');
    await item.locator('a').click();
    await page.waitForURL(`**/tasks/${child.id}`);
    await page.waitForSelector('#parent-link');
    assert.match(await page.textContent('#task-meta'), /a research subagent \(on the host, no VM\) of/);
    for (const sel of ['#screen-panel', '#btn-takeover', '#btn-screenshot']) {
      assert.equal(await page.isHidden(sel), true, `${sel} is shown for a subagent without a VM`);
    }
    await env.done(page);
  } finally {
    await api('PATCH', '/settings', { workerProviderName: '', workerModelId: '' });
  }
});
