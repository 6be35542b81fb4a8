// A web session is not the owner: some time after its login link (10 s
// here, 10 minutes by default), creating an API key needs a fresh link.
// The settings page says so and how to get one; with a new link it works.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { signIn } from './lib/browser.mjs';
import { suite } from './lib/suite.mjs';

const env = suite('stepup', { helperArgs: ['--web-step-up', '10s'] });

test('an API key needs a fresh login link once the step-up window has passed', { timeout: 60000 }, async () => {
  const page = await env.page('/settings');
  await page.waitForSelector('#new-apikey');
  await page.waitForTimeout(10500);
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
