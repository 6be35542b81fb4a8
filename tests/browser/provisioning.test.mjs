// Provisioning (issue 20). A task's own variables and setup commands are
// given in the new-task form: a line without a value is refused in words
// before anything is sent; the task keeps them, and its setup command sees
// its variable in the real sandbox. In Settings, a variable, a secret
// variable (its value never shown again nor left in the page), a file and
// a setup command are added and listed; a bad name is refused in words and
// stores nothing; an entry is removed, the secret's stored value kept
// through every save.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { text } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('provisioning');
const SECRET = 'pr0v-browser-s3cret';

test('a task\'s own variables and setup commands are given in the new-task form', { timeout: 90000 }, async () => {
  const { helper, llm } = env;
  const M = '[[own-provisioning]]';
  llm.script(M, [text('The project is set up.')], { success: true, summary: 'Set up.' });
  const page = await env.page('/');
  await page.fill('#task-description', `Check the project ${M}`);
  await page.click('#advanced summary');
  await page.fill('#task-env', 'PROJECT=browser-form\nLOOSE');
  await page.fill('#task-setup', 'test "$PROJECT" = browser-form\n\necho "$PROJECT" > "$HOME/setup-ran"');
  await page.click('#start-task');
  await page.locator('#form-status', { hasText: 'Environment variables: "LOOSE" has no value (write NAME=value)' }).waitFor();
  assert.equal((await helper.api('GET', '/api/v1/tasks')).tasks.length, 0, 'nothing was sent');
  await page.fill('#task-env', 'PROJECT=browser-form');
  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  // The first command fails the task unless the variable reached it.
  const done = await helper.waitTask(id, 'the provisioned task', (t) => ['completed', 'failed'].includes(t.status), 60000);
  assert.equal(done.status, 'completed', done.errorMessage || done.statusReason);
  assert.deepEqual(done.provisioning, {
    environment: { PROJECT: 'browser-form' },
    setupCommands: [{ command: 'test "$PROJECT" = browser-form' }, { command: 'echo "$PROJECT" > "$HOME/setup-ran"' }],
  });
  await env.done(page);
});

test('variables, files and setup commands are edited in Settings, secrets write-only', { timeout: 60000 }, async () => {
  const { helper } = env;
  const page = await env.page('/settings#provisioning');
  await page.waitForSelector('text=Nothing is provisioned');

  await page.click('#add-variable-box summary');
  await page.fill('#new-variable-key', 'GREETING');
  await page.fill('#new-variable-value', 'hello there');
  await page.click('#add-variable button[type=submit]');
  await page.locator('[data-variable="GREETING"]').waitFor();

  await page.click('#add-variable-box summary');
  await page.fill('#new-variable-key', 'API_TOKEN');
  await page.check('#new-variable-secret');
  assert.equal(await page.getAttribute('#new-variable-value', 'type'), 'password');
  await page.fill('#new-variable-value', SECRET);
  await page.click('#add-variable button[type=submit]');
  const secretRow = page.locator('[data-variable="API_TOKEN"]');
  await secretRow.waitFor();
  assert.match(await secretRow.textContent(), /API_TOKEN = secret · every VM/);
  assert.equal(await page.inputValue('#new-variable-value'), '', 'the secret is not left in the page');

  await page.click('#add-file-box summary');
  await page.fill('#new-file-source', '/etc/hostname');
  await page.fill('#new-file-guest', '~/.config/host.txt');
  await page.fill('#new-file-mode', '0600');
  await page.click('#add-file button[type=submit]');
  const fileRow = page.locator('[data-file="~/.config/host.txt"]');
  await fileRow.waitFor();
  assert.match(await fileRow.textContent(), /\/etc\/hostname → ~\/\.config\/host\.txt \(0600\)/);

  await page.click('#add-setup-box summary');
  await page.fill('#new-setup-command', 'pip install --user requests');
  await page.fill('#new-setup-timeout', '120');
  await page.fill('#new-setup-template', 'Host desktop');
  await page.click('#add-setup button[type=submit]');
  const setupRow = page.locator('[data-setup="1"]');
  await setupRow.waitFor();
  assert.match(await setupRow.textContent(), /pip install --user requests · template Host desktop · 120 s/);
  assert.ok(!(await page.content()).includes(SECRET), 'the page does not hold the secret');

  // A reserved name: refused in words, nothing stored.
  const before = await helper.api('GET', '/api/v1/provisioning');
  await page.click('#add-variable-box summary');
  await page.fill('#new-variable-key', 'PATH');
  await page.fill('#new-variable-value', '/evil');
  await page.click('#add-variable button[type=submit]');
  await page.waitForSelector('text=PATH is set by the VM\'s session or the helper');
  assert.deepEqual(await helper.api('GET', '/api/v1/provisioning'), before);
  await page.fill('#new-variable-key', '');
  await page.fill('#new-variable-value', '');

  // Removing the plain variable keeps the secret's stored value.
  await page.locator('[data-variable="GREETING"] button:has-text("Remove")').click();
  await page.locator('[data-variable="GREETING"]').waitFor({ state: 'detached' });
  const after = await helper.api('GET', '/api/v1/provisioning');
  assert.deepEqual(after.environmentVariables, [{ key: 'API_TOKEN', secret: true }]);
  assert.ok(!JSON.stringify(after).includes(SECRET));
  assert.equal(after.injectedFiles[0].guestPath, '~/.config/host.txt');
  assert.equal(after.setupCommands[0].template, 'Host desktop');
  await env.done(page);
});
