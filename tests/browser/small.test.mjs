// Small things users expect (issue 36.7), in the web UI: the completion
// check's tries and the upload limit on the Settings page, saved, read
// back and refused out of range with the helper's message; the Evals
// pages count a run's tasks from its suite ("31 of the suite's 41
// tasks"), not from the tasks that ran alone; credentials edited and
// imported from a browser's export; MCP servers edited; a task's output
// opened and shown in its folder from the task page, through the desktop's
// opener (a stand-in xdg-open first on the helper's PATH records what it
// is asked to open), a script the guest wrote never opened.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const fakeBin = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-open-'));
const openedLog = path.join(fakeBin, 'opened.log');
fs.writeFileSync(path.join(fakeBin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$1" >> '${openedLog}'\n`, { mode: 0o755 });
process.env.PATH = `${fakeBin}:${process.env.PATH}`; // the helper starts with it
after(() => fs.rmSync(fakeBin, { recursive: true, force: true }));
const opened = () => (fs.existsSync(openedLog) ? fs.readFileSync(openedLog, 'utf8').split('\n').filter((l) => l) : []);

const env = suite('small');

test('completion checks and the upload limit are settings', { timeout: 90000 }, async () => {
  const { helper } = env;
  const page = await env.page('/settings');
  const settings = () => helper.api('GET', '/api/v1/settings');
  await page.waitForFunction(() => document.getElementById('s-completionCheckTries').value === '2');
  assert.equal(await page.inputValue('#s-maxUploadMB'), '512');
  await page.fill('#s-completionCheckTries', '4');
  await page.click('#task-defaults button[type=submit]');
  await eventually('the tries saved', async () => (await settings()).completionCheckTries === 4);
  await page.fill('#s-maxUploadMB', '64');
  await page.locator('#s-maxUploadMB').evaluate((el) => el.form.requestSubmit());
  await eventually('the upload limit saved', async () => (await settings()).maxUploadMB === 64);
  await page.reload();
  await page.waitForFunction(() => document.getElementById('s-completionCheckTries').value === '4');
  assert.equal(await page.inputValue('#s-maxUploadMB'), '64');

  // Out of range: the browser's own check stops it, and the helper's
  // message shows when the form is sent anyway.
  await page.fill('#s-completionCheckTries', '11');
  assert.equal(await page.locator('#s-completionCheckTries').evaluate((el) => el.validity.rangeOverflow), true);
  await page.locator('#task-defaults form').evaluate((f) => { f.noValidate = true; f.requestSubmit(); });
  await page.waitForSelector('#toasts .toast.error >> text=completionCheckTries must be between 1 and 10 (got 11)');
  assert.equal((await settings()).completionCheckTries, 4);
  await env.done(page);
});

test('an eval run counts its tasks from its suite', { timeout: 60000 }, async () => {
  const { helper } = env;
  const id = '20260301-100000-abcd';
  const dir = path.join(helper.home, 'Evals', id);
  fs.mkdirSync(dir, { recursive: true });
  const tasks = Array.from({ length: 31 }, (_, i) => `task-${i}`);
  const start = new Date(Date.now() - 3600e3).toISOString();
  fs.writeFileSync(path.join(dir, 'results.json'), JSON.stringify({
    id, suite: 'linux-desktop', suiteDir: '/x', provider: 'Scripted', models: ['big'], repeat: 1,
    startedAt: start, endedAt: new Date().toISOString(), tasks, suiteTasks: 41,
    problems: [{ file: 'broken.json', error: 'unknown field' }],
    results: tasks.map((t) => ({ task: t, model: 'big', attempt: 1, success: true, category: 'passed' })),
  }));
  const page = await env.page('/evals');
  await page.waitForSelector(`tr[data-run="${id}"] .run-tasks`);
  assert.equal(await page.textContent(`tr[data-run="${id}"] .run-tasks`), "31 of the suite's 41 tasks");
  await page.click(`tr[data-run="${id}"] a`);
  await page.waitForSelector('#run-tasks');
  assert.equal(await page.textContent('#run-tasks'), "31 of the suite's 41 tasks × 1 run per model");
  await env.done(page);
});

test('credentials are imported from a browser export and edited', { timeout: 90000 }, async () => {
  const { helper } = env;
  const page = await env.page('/settings#credentials');
  page.on('dialog', (d) => d.accept());
  await page.waitForSelector('#credential-list p.muted');
  const csv = (text) => ({ name: 'passwords.csv', mimeType: 'text/csv', buffer: Buffer.from(text) });

  // A row without a password: nothing imported, its line named.
  await page.click('#import-credentials-box summary');
  await page.setInputFiles('#import-credentials-file', csv('name,url,username,password,note\nmail,https://mail.example,ada,ml-S3CRET-1,\nbank,https://bank.example,bob,,\n'));
  await page.click('#import-credentials button[type=submit]');
  await page.waitForSelector('#import-credentials-status >> text=Nothing was imported: line 3: no password');
  assert.equal((await helper.api('GET', '/api/v1/credentials')).credentials.length, 0);

  await page.setInputFiles('#import-credentials-file', csv('"url","username","password","httpRealm"\n"https://www.example.org","ada","ff-S3CRET-2",\n"https://mail.example","bob","ml-S3CRET-3",\n'));
  await page.click('#import-credentials button[type=submit]');
  await page.waitForSelector('#import-credentials-status >> text=Imported 2 credentials: example.org, mail.example');
  await page.waitForSelector('li[data-credential="example.org"]');
  assert.match(await page.textContent('li[data-credential="mail.example"]'), /bob · password stored/);

  // Edit: renamed, an application set; the password left empty stays.
  await page.click('button[aria-label="Edit example.org"]');
  assert.equal(await page.inputValue('#new-credential-username'), 'ada');
  assert.equal(await page.inputValue('#new-credential-password'), '', 'no secret comes back to the form');
  await page.fill('#new-credential-name', 'example');
  await page.fill('#new-credential-apps', 'Firefox');
  await page.click('#credential-submit');
  await page.waitForSelector('li[data-credential="example"]');
  const list = (await helper.api('GET', '/api/v1/credentials')).credentials;
  const ex = list.find((c) => c.name === 'example');
  assert.deepEqual([ex.username, ex.hasPassword, ex.allowedApps], ['ada', true, ['Firefox']]);
  assert.equal(await page.textContent('#credential-submit'), 'Add credential', 'the form is an add form again');
  assert.doesNotMatch(await page.content(), /S3CRET/);
  await env.done(page);
});

test('an MCP server is edited: address, environment, headers kept or removed', { timeout: 90000 }, async () => {
  const { helper } = env;
  await helper.api('POST', '/api/v1/mcp-servers', { name: 'records', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer mcp-S3CRET', 'X-Team': 'red' } });
  const page = await env.page('/settings#mcp');
  await page.click('article[data-mcp="records"] button[aria-label="Edit records"]');
  assert.equal(await page.isDisabled('#new-mcp-name'), true);
  assert.equal(await page.inputValue('#new-mcp-headers'), 'Authorization\nX-Team', 'names only, no values');
  await page.fill('#new-mcp-url', 'http://127.0.0.1:9/moved');
  await page.fill('#new-mcp-headers', 'Authorization\nX-Extra: yes');
  await page.fill('#new-mcp-timeout', '9');
  await page.click('#mcp-submit');
  await page.waitForSelector('article[data-mcp="records"] >> text=http://127.0.0.1:9/moved');
  let m = (await helper.api('GET', '/api/v1/mcp-servers')).servers[0];
  assert.deepEqual([m.url, m.headerNames, m.timeoutSeconds], ['http://127.0.0.1:9/moved', ['Authorization', 'X-Extra'], 9]);

  // Turned into a command: the address and headers go.
  await page.click('article[data-mcp="records"] button[aria-label="Edit records"]');
  await page.selectOption('#new-mcp-kind', 'command');
  await page.fill('#new-mcp-command', '/usr/bin/env');
  await page.fill('#new-mcp-args', 'mcp-records\n--verbose');
  await page.fill('#new-mcp-env', 'TOKEN=abc');
  await page.click('#mcp-submit');
  await page.waitForSelector('article[data-mcp="records"] >> text="/usr/bin/env mcp-records --verbose"');
  m = (await helper.api('GET', '/api/v1/mcp-servers')).servers[0];
  assert.deepEqual([m.url || '', m.command, m.args, m.envNames, m.headerNames], ['', '/usr/bin/env', ['mcp-records', '--verbose'], ['TOKEN'], []]);

  // A name alone that has no stored value: the helper's message.
  await page.click('article[data-mcp="records"] button[aria-label="Edit records"]');
  await page.fill('#new-mcp-env', 'TOKEN\nNEWNAME');
  await page.click('#mcp-submit');
  await page.waitForSelector('#toasts .toast.error >> text=env NEWNAME: null keeps a stored value, and it has none');
  await env.done(page);
});

test('a task\'s output is opened and shown in its folder from the task page', { timeout: 180000 }, async () => {
  const { helper, llm } = env;
  const M = '[[webreveal]]';
  llm.script(M, [tool('write_file', { path: 'outbox/report.txt', contents: 'done\n' }),
    tool('write_file', { path: 'outbox/setup.desktop', contents: '[Desktop Entry]\nExec=sh -c "rm -rf ~"\n' }), text('Done.')],
  { success: true, summary: 'Wrote the report.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Write a report ${M}` });
  await helper.waitTask(task.id, 'the end', (t) => t.status === 'completed', 120000);
  const files = await helper.api('GET', `/api/v1/tasks/${task.id}/files`);
  const saved = Object.fromEntries(files.outputFiles.map((f) => [f.name, f.savedTo]));
  assert.ok(saved['report.txt'] && saved['setup.desktop'], JSON.stringify(files));

  const page = await env.page(`/tasks/${task.id}`);
  await page.click('button[aria-label="Open report.txt"]');
  await page.waitForSelector('#toasts >> text=Opening report.txt.');
  await page.click('button[aria-label="Show report.txt in its folder"]');
  await page.waitForSelector('#toasts >> text=Showing the folder of report.txt.');
  await eventually('the opener ran twice', async () => opened().length === 2);
  assert.deepEqual(opened(), [saved['report.txt'], path.dirname(saved['report.txt'])]);

  // A launcher the guest wrote: refused with the reason, nothing run.
  await page.click('button[aria-label="Open setup.desktop"]');
  await page.waitForSelector('#toasts .toast.error >> text=a .desktop file may run');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(opened().length, 2, 'nothing more was opened');
  await env.done(page);
});
