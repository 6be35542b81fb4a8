// First launch and settings: a page without a session says how to get one;
// with no provider the dashboard sends the user to the guided setup, which
// offers the vendors' APIs and local servers as presets of their provider
// types, connects and tests a provider, picks its model and suggests a
// first task; then a settings round trip (providers added, edited, tested
// and removed, an Anthropic one among them, a type changed; defaults and
// tool policy saved and read back; an API key created and revoked). No
// provider key ever comes back to the page.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openPage } from './lib/browser.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('settings', { provider: false });

const SECRETS = ['sk-onboard-SECRET-1111', 'sk-edited-SECRET-2222', 'sk-second-SECRET-3333', 'sk-ant-SECRET-4444'];

/**
 * Passes every API response through the test on its way to the page and
 * records its body (the event and frame streams excepted, which never end).
 */
async function watchResponses(page) {
  const seen = [];
  await page.route('**/api/v1/**', async (route) => {
    if (/\/(events|stream)(\?|$)/.test(new URL(route.request().url()).pathname)) return route.continue();
    const resp = await route.fetch();
    const body = await resp.text();
    seen.push({ url: route.request().url(), method: route.request().method(), status: resp.status(), body });
    await route.fulfill({ response: resp, body });
  });
  return seen;
}

test('a page without a session shows how to get one', { timeout: 60000 }, async () => {
  const page = await openPage(env.browser);
  env.pages.push(page);
  await page.goto(env.helper.base + '/');
  await page.waitForSelector('#signin-title');
  assert.match(await page.textContent('#main'), /hivecrew open/);
  assert.equal(await page.isDisabled('#kill-switch'), true);
  await env.done(page);
});

test('onboarding, then a settings round trip with write-only keys', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  const page = await openPage(env.browser);
  env.pages.push(page);
  page.on('dialog', (d) => d.accept());
  const responses = await watchResponses(page);
  await page.goto(await helper.loginLink());

  // No provider: the guided setup.
  await page.waitForURL(/\/welcome$/);
  // The presets: the vendors' APIs as their types, local servers as
  // OpenAI-compatible endpoints.
  for (const [preset, url, type] of [
    ['anthropic', 'https://api.anthropic.com', /Provider type: Anthropic \(Messages API\)/],
    ['openai', 'https://api.openai.com/v1', /Provider type: OpenAI \(Responses\)/],
    ['ollama', 'http://localhost:11434/v1', /Provider type: OpenAI-compatible/],
    ['vllm', 'http://localhost:8000/v1', /Provider type: OpenAI-compatible/],
  ]) {
    await page.selectOption('#onboard-preset', preset);
    assert.equal(await page.inputValue('#onboard-url'), url, `${preset}'s base URL`);
    assert.match(await page.textContent('#onboard-type'), type);
  }
  assert.equal(await page.textContent('#onboard-url-hint'), '', 'a local server\'s address needs no hint');
  await page.selectOption('#onboard-preset', 'anthropic');
  assert.match(await page.textContent('#onboard-url-hint'), /Anthropic's own API, filled in for you/);
  await page.selectOption('#onboard-preset', 'custom');
  await page.fill('#onboard-name', 'Onboarded');
  await page.fill('#onboard-url', llm.url);
  assert.equal(await page.getAttribute('#onboard-key', 'type'), 'password');
  await page.fill('#onboard-key', SECRETS[0]);
  await page.click('#onboard-connect');
  await page.waitForSelector('#onboard-status.ok');
  assert.match(await page.textContent('#onboard-status'), /Connected/);
  assert.equal(await page.inputValue('#onboard-key'), '', 'the key field is emptied');
  assert.ok(llm.auths.includes(`Bearer ${SECRETS[0]}`), 'the test used the stored key');
  await page.waitForSelector('#model-step:not([hidden])');
  await page.waitForFunction(() => document.getElementById('onboard-model-id').value === 'scripted-large');
  await page.fill('#onboard-model-id', 'scripted-small');
  await page.click('#onboard-model button[type=submit]');
  await page.waitForSelector('#first-task-step:not([hidden])');
  // With only the host template, the first run offers the more isolated
  // Linux desktop template (building it is not started here: it downloads
  // Debian).
  await page.waitForSelector('#isolation-offer:not([hidden])');
  assert.match(await page.textContent('#isolation-offer'), /root filesystem of its own/);
  assert.equal(await page.textContent('#build-desktop'), 'Build the Linux desktop template');
  const suggestion = (await page.textContent('#suggestion-text')).trim();
  await page.click('#use-suggestion');
  await page.waitForURL(/\/\?describe=/);
  await page.waitForFunction((s) => document.getElementById('task-description').value === s, suggestion);
  await page.waitForFunction(() => document.getElementById('task-model').value === 'scripted-small');
  let provs = (await helper.api('GET', '/api/v1/providers')).providers;
  assert.deepEqual(provs.map((p) => [p.displayName, p.type, p.defaultModelId, p.isDefault, p.hasAPIKey]), [['Onboarded', 'openai-compatible', 'scripted-small', true, true]]);

  // Edit the provider: new name, new key, another model; test it.
  await page.goto(helper.base + '/settings');
  const card = page.locator('[data-provider="Onboarded"]');
  await card.waitFor();
  assert.match(await card.textContent(), /key stored/);
  await card.locator('button[data-edit]').click();
  const id = provs[0].id;
  await page.fill(`#edit-${id}-name`, 'Onboarded Edited');
  assert.equal(await page.getAttribute(`#edit-${id}-key`, 'type'), 'password');
  assert.equal(await page.inputValue(`#edit-${id}-key`), '', 'the stored key is not shown');
  await page.fill(`#edit-${id}-key`, SECRETS[1]);
  await page.fill(`#edit-${id}-model`, 'scripted-large');
  await page.selectOption(`#edit-${id}-reasoning`, 'high');
  await page.click(`[data-provider="Onboarded"] form button[type=submit]`);
  const edited = page.locator('[data-provider="Onboarded Edited"]');
  await edited.waitFor();
  assert.match(await edited.textContent(), /default model scripted-large · reasoning high/);
  assert.equal((await helper.api('GET', `/api/v1/providers/${id}`)).defaultReasoningEffort, 'high');
  const before = llm.auths.length;
  await edited.locator('button:has-text("Test connection")').click();
  await edited.locator('.test-result.ok').waitFor();
  assert.ok(llm.auths.slice(before).includes(`Bearer ${SECRETS[1]}`), 'the test used the new key');

  // Add a second provider; make it an Anthropic one behind a gateway of
  // its own (its address stays).
  await page.click('#add-provider-box summary');
  assert.equal(await page.inputValue('#new-provider-type'), 'openai-compatible', 'the default type');
  await page.fill('#new-provider-name', 'Second');
  await page.fill('#new-provider-url', llm.url);
  assert.equal(await page.getAttribute('#new-provider-key', 'type'), 'password');
  await page.fill('#new-provider-key', SECRETS[2]);
  await page.fill('#new-provider-model', 'scripted-small');
  await page.click('#add-provider button[type=submit]');
  const second = page.locator('[data-provider="Second"]');
  await second.waitFor();
  assert.match(await second.textContent(), /key stored/);
  assert.match(await second.textContent(), /OpenAI-compatible · .* · Chat Completions/);
  provs = (await helper.api('GET', '/api/v1/providers')).providers;
  assert.deepEqual(provs.map((p) => [p.displayName, p.type]).sort(), [['Onboarded Edited', 'openai-compatible'], ['Second', 'openai-compatible']]);
  const secondID = provs.find((p) => p.displayName === 'Second').id;
  await second.locator('button[data-edit]').click();
  await page.selectOption(`#edit-${secondID}-type`, 'anthropic');
  assert.equal(await page.inputValue(`#edit-${secondID}-url`), llm.url, 'an address of its own stays');
  assert.equal(await page.isVisible(`#edit-${secondID}-mode`), false, 'an anthropic provider has no API to choose');
  assert.match(await page.textContent(`#edit-${secondID}-url-hint`), /A gateway to Anthropic's API \(empty: Anthropic's own, https:\/\/api\.anthropic\.com\)/);
  await page.click('[data-provider="Second"] form button[type=submit]');
  await page.waitForFunction(() => /Anthropic · /.test(document.querySelector('[data-provider="Second"]').textContent));
  assert.match(await second.textContent(), /Messages API/);
  const secondNow = await helper.api('GET', `/api/v1/providers/${secondID}`);
  assert.deepEqual([secondNow.type, secondNow.baseURL, secondNow.backendMode, secondNow.hasAPIKey], ['anthropic', llm.url, 'chat_completions', true]);

  // Add an Anthropic provider: its base URL fills in, and says so.
  await page.click('#add-provider-box summary');
  await page.selectOption('#new-provider-type', 'openai');
  assert.equal(await page.inputValue('#new-provider-url'), 'https://api.openai.com/v1');
  assert.equal(await page.inputValue('#new-provider-mode'), 'responses', "OpenAI's default API");
  await page.selectOption('#new-provider-type', 'anthropic');
  assert.equal(await page.inputValue('#new-provider-url'), 'https://api.anthropic.com', "Anthropic's address replaces OpenAI's");
  assert.match(await page.textContent('#new-provider-url-hint'), /Anthropic's own API, filled in for you/);
  assert.equal(await page.isVisible('#new-provider-mode'), false, 'an anthropic provider has no API to choose');
  await page.fill('#new-provider-name', 'Claude');
  await page.fill('#new-provider-key', SECRETS[3]);
  await page.fill('#new-provider-model', 'claude-sonnet-4-5');
  await page.click('#add-provider button[type=submit]');
  const claude = page.locator('[data-provider="Claude"]');
  await claude.waitFor();
  assert.match(await claude.textContent(), /Anthropic · https:\/\/api\.anthropic\.com · Messages API · default model claude-sonnet-4-5/);
  assert.match(await claude.textContent(), /key stored/);
  const added = (await helper.api('GET', '/api/v1/providers')).providers.find((p) => p.displayName === 'Claude');
  assert.deepEqual([added.type, added.baseURL, added.backendMode, added.hasAPIKey, added.defaultModelId, added.isDefault],
    ['anthropic', 'https://api.anthropic.com', 'chat_completions', true, 'claude-sonnet-4-5', false]);
  assert.equal(await page.inputValue('#new-provider-type'), 'openai-compatible', 'the add form starts over');
  assert.equal(await page.inputValue('#new-provider-url'), '');

  // Remove both.
  for (const card of [second, claude]) {
    await card.locator('button:has-text("Remove")').click();
    await card.waitFor({ state: 'detached' });
  }
  provs = (await helper.api('GET', '/api/v1/providers')).providers;
  assert.deepEqual(provs.map((p) => p.displayName), ['Onboarded Edited']);

  // Task defaults and the tool policy: saved, and read back after a reload.
  // What is being edited in Safety is not reset by the save of Task
  // defaults (the page refills only the section it saved).
  const settings = () => helper.api('GET', '/api/v1/settings');
  await page.selectOption('#sp-run_shell', 'deny');
  await page.selectOption('#sp-open_url', 'ask');
  await page.fill('#s-traceRetentionDays', '30');
  await page.fill('#s-defaultTimeoutMinutes', '45');
  await page.click('#task-defaults button[type=submit]');
  await page.waitForSelector('#toasts >> text=Settings saved.');
  assert.equal((await settings()).defaultTimeoutMinutes, 45);
  assert.notEqual((await settings()).traceRetentionDays, 30, 'only its own section was saved');
  assert.deepEqual([await page.inputValue('#sp-run_shell'), await page.inputValue('#sp-open_url'), await page.inputValue('#s-traceRetentionDays')],
    ['deny', 'ask', '30'], 'the unsaved Safety edits are still there');
  await page.click('#safety button[type=submit]');
  await eventually('the policy saved', async () => (await settings()).traceRetentionDays === 30);
  await page.fill('#s-warmPoolSize', '0');
  await page.click('#vm-defaults button[type=submit]');
  await eventually('the warm pool size saved', async () => (await settings()).warmPoolSize === 0);
  await page.waitForSelector('#toasts >> text=Settings saved.');
  const saved = await settings();
  assert.equal(saved.defaultTimeoutMinutes, 45);
  assert.deepEqual(saved.toolPolicy, { run_shell: 'deny', open_url: 'ask' });
  await page.reload();
  await page.waitForFunction(() => document.getElementById('s-defaultTimeoutMinutes').value === '45');
  assert.equal(await page.inputValue('#sp-run_shell'), 'deny');
  assert.equal(await page.inputValue('#sp-open_url'), 'ask');

  // A value the form accepts but the helper refuses: its message shows,
  // and nothing is saved.
  await page.fill('#s-warmPoolSize', '3');
  await page.click('#vm-defaults button[type=submit]');
  await page.waitForSelector('#toasts .toast.error >> text=warmPoolSize (3) cannot exceed maxConcurrentVMs (2)');
  assert.equal((await helper.api('GET', '/api/v1/settings')).warmPoolSize, 0);

  // An API key: shown once, then revoked.
  await page.fill('#apikey-name', 'ci');
  await page.click('#new-apikey button[type=submit]');
  await page.waitForSelector('#apikey-created:not([hidden])');
  assert.match(await page.textContent('#apikey-created .secret-shown'), /^hc_/);
  await page.click('button[aria-label="Revoke ci"]');
  await page.waitForSelector('button[aria-label="Revoke ci"]', { state: 'detached' });
  const keys = (await helper.api('GET', '/api/v1/apikeys')).keys;
  assert.ok(keys.find((k) => k.name === 'ci').revokedAt, 'the key is revoked');

  // No provider key ever came back to the page.
  const seenProviders = responses.filter((r) => r.url.includes('/api/v1/providers'));
  assert.ok(seenProviders.length >= 10, `provider responses were recorded (${seenProviders.length})`);
  for (const r of responses) {
    for (const s of SECRETS) assert.ok(!r.body.includes(s), `${r.method} ${r.url} sent back a provider key`);
  }
  await env.done(page);
});
