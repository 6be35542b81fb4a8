// Credentials in Settings (issue 19.1): added with a password that is
// never shown again nor left in the page, listed with what is stored,
// removed; then a task types it with use_credential after the user's
// approval in the agent window, and the model never sees it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('credentials');
const SECRET = 'pa55-w0rd&<for>"the test"';

test('a credential is added in Settings, typed after approval, and never shown', { timeout: 120000 }, async () => {
  const { helper, llm } = env;
  const page = await env.page('/settings#credentials');
  // What redaction promises, and what it does not, is said where
  // credentials are added; so is what an application limit is.
  assert.match(await page.textContent('#credential-promise'), /always encode it some other way/);
  assert.match(await page.textContent('label[for="new-credential-apps"]'), /a convenience, not a safety control/);
  await page.click('#add-credential-box summary');
  await page.fill('#new-credential-name', 'intranet');
  await page.fill('#new-credential-username', 'alice');
  assert.equal(await page.getAttribute('#new-credential-password', 'type'), 'password');
  await page.fill('#new-credential-password', SECRET);
  await page.fill('#new-credential-apps', '');
  await page.click('#add-credential button[type=submit]');
  const row = page.locator('[data-credential="intranet"]');
  await row.waitFor();
  assert.match(await row.textContent(), /alice · password stored · any application/);
  assert.equal(await page.inputValue('#new-credential-password'), '', 'the password is not left in the page');
  assert.ok(!(await page.content()).includes(SECRET), 'the page does not hold the password');
  const listed = await helper.api('GET', '/api/v1/credentials');
  assert.ok(!JSON.stringify(listed).includes(SECRET));

  // A task types it: the agent window asks first.
  const M = '[[credential]]';
  llm.script(M, [tool('use_credential', { name: 'intranet', field: 'password' }), text('Typed it.')], { success: true, summary: 'Logged in.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Log in ${M}` });
  const agent = await env.page(`/tasks/${task.id}`);
  await agent.waitForSelector('#permission-card:not([hidden])', { timeout: 60000 });
  assert.equal(await agent.textContent('#permission-tool'), 'use_credential');
  assert.ok(!(await agent.textContent('#permission-details')).includes(SECRET));
  await agent.click('#permission-approve');
  await helper.waitTask(task.id, 'completion', (t) => t.status === 'completed');
  assert.ok(llm.bodies(M).every((b) => !b.includes('pa55-w0rd')), 'the model never saw the password');
  assert.ok(llm.bodies(M).some((b) => b.includes('Typed the password of \\"intranet\\"')));
  await env.done(agent);

  // Removed from Settings.
  page.once('dialog', (d) => d.accept());
  await row.locator('button:has-text("Remove")').click();
  await page.waitForSelector('text=No credentials yet.');
  await env.done(page);
});
