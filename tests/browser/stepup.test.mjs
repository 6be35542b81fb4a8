// A web session is not the owner: some time after its login link (10 s
// here, 10 minutes by default), creating an API key, sending a stored
// secret to a new address, or giving a task more than Settings give needs a
// fresh link. The page says so and how to get one; with a new link (opened
// in another tab, as `hivecrew open` does) the same click in the same page
// works.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signIn, watch } from './lib/browser.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('stepup', { helperArgs: ['--web-step-up', '10s'] });
const WINDOW_MS = 10500;

test('an API key needs a fresh login link once the step-up window has passed', { timeout: 60000 }, async () => {
  const page = await env.page('/settings');
  await page.waitForSelector('#new-apikey');
  await page.waitForTimeout(WINDOW_MS);
  await page.fill('#apikey-name', 'late');
  await page.click('#new-apikey button[type=submit]');
  const toast = page.locator('.toast', { hasText: 'fresh sign-in' });
  await toast.waitFor();
  assert.match(await toast.textContent(), /hivecrew open/);
  assert.equal(await page.isHidden('#apikey-created'), true, 'no key was shown');
  assert.equal((await env.helper.api('GET', '/api/v1/apikeys')).keys.filter((k) => k.name === 'late').length, 0, 'no key was made');

  await signIn(page, env.helper, '/settings');
  await page.waitForSelector('#new-apikey');
  await page.fill('#apikey-name', 'fresh');
  await page.click('#new-apikey button[type=submit]');
  await page.waitForSelector('#apikey-created:not([hidden])');
  assert.match(await page.textContent('#apikey-created .secret-shown'), /^hc_/);
  await page.context().close();
  env.pages = env.pages.filter((p) => p !== page);
});

test('a stale page can neither send the search key elsewhere nor start a task that asks less than Settings', { timeout: 120000 }, async () => {
  const { helper } = env;
  await helper.api('PUT', '/api/v1/web-search', { apiKey: 'brave-key-secret' });
  await helper.api('PATCH', '/api/v1/settings', { webSearchBackend: 'brave', webSearchURL: '' });

  // Two pages of one browser: Settings and the dashboard.
  const settings = await env.page('/settings');
  const dash = watch(await settings.context().newPage());
  dash.setDefaultTimeout(20000);
  await dash.goto(helper.base + '/');
  await settings.waitForSelector('#ws-backend');
  await dash.waitForSelector('#policy-run_shell', { state: 'attached' });
  await settings.waitForTimeout(WINDOW_MS);

  // The search key's address.
  await settings.fill('#ws-url', 'http://127.0.0.1:9/steal');
  await settings.click('#web-search-form button[type=submit]');
  const searchToast = settings.locator('.toast', { hasText: 'fresh sign-in' });
  await searchToast.waitFor();
  assert.match(await searchToast.textContent(), /search API key to http:\/\/127\.0\.0\.1:9\/steal.*hivecrew open/);
  assert.equal((await helper.api('GET', '/api/v1/web-search')).url ?? '', '', 'the address did not change');

  // A task that allows run_shell where Settings ask.
  await dash.fill('#task-description', 'Tidy up [[stepup]]');
  await dash.click('#advanced summary');
  await dash.selectOption('#policy-run_shell', 'allow');
  await dash.click('#start-task');
  const taskToast = dash.locator('.toast', { hasText: 'fresh sign-in' });
  await taskToast.waitFor();
  assert.match(await taskToast.textContent(), /tool policy that asks less than Settings.*run_shell/);
  assert.equal((await helper.api('GET', '/api/v1/tasks')).tasks.length, 0, 'no task was made');
  assert.equal(await dash.isEnabled('#start-task'), true, 'the form can be sent again');

  // A new login link, opened in a third tab; then the same clicks.
  const fresh = watch(await settings.context().newPage());
  await signIn(fresh, helper, '/');
  await fresh.close();
  await settings.click('#web-search-form button[type=submit]');
  await settings.locator('.toast', { hasText: 'Web search saved' }).waitFor();
  assert.equal((await helper.api('GET', '/api/v1/web-search')).url, 'http://127.0.0.1:9/steal');

  await dash.click('#start-task');
  await dash.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(dash.url()).pathname.split('/')[2]);
  const task = await helper.task(id);
  assert.deepEqual(task.toolPolicy, { run_shell: 'allow' });
  await eventually('the task to end', async () => ['completed', 'failed'].includes((await helper.task(id)).status), 60000);
  await env.done(settings);
});
