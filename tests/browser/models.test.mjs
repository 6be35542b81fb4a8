// The new-task form's model and reasoning choices against providers whose
// model lists differ: each provider's own models with its default chosen,
// no list shown for a provider no longer chosen, the reasoning choices the
// chosen model takes, a typed model when the list cannot be fetched (and
// why), and the chosen model and effort in the task it starts, its
// request to the provider and a preset saved from the form.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { shot } from './lib/browser.mjs';
import { ScriptedLLM } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('models');
let thinker; // a second provider, whose models reason
let broken; // a third, whose model list is refused
let ready = null;

/** Adds the two more providers (once; the suite's helper is up by a test's start). */
function providers() {
  ready ||= addProviders();
  return ready;
}

async function addProviders() {
  // The default provider's models take no reasoning setting.
  env.llm.models = [{ id: 'scripted-large', supported_parameters: ['tools'] }, { id: 'scripted-small', supported_parameters: ['tools'] }];
  thinker = await new ScriptedLLM().start();
  thinker.models = [
    { id: 'think-deep', name: 'Think Deep', supported_parameters: ['tools', 'reasoning'] },
    { id: 'think-fast', supported_parameters: ['tools', 'include_reasoning'] },
  ];
  broken = await new ScriptedLLM().start();
  broken.modelsError = { status: 403, message: 'this key may not list models' };
  await env.helper.api('POST', '/api/v1/providers', { displayName: 'Thinker', baseURL: thinker.url, apiKey: 'sk-thinker', defaultModelId: 'think-fast' });
  await env.helper.api('POST', '/api/v1/providers', { displayName: 'Broken', baseURL: broken.url, apiKey: 'sk-broken', defaultModelId: 'broken-1' });
}
after(async () => {
  await thinker?.close();
  await broken?.close();
});

/** The model list's option values (the last, '', is "Other model…"), and whether the list and the typed field show. */
const modelPicker = (page) => page.evaluate(() => ({
  options: [...document.querySelectorAll('#task-model option')].map((o) => o.value),
  value: document.getElementById('task-model').value,
  listShown: !document.getElementById('task-model').hidden,
  typedShown: !document.getElementById('task-model-text').hidden,
  typed: document.getElementById('task-model-text').value,
  hint: document.getElementById('model-hint').textContent,
}));

const efforts = (page) => page.$$eval('#task-reasoning option', (os) => os.map((o) => o.value));

test('the form lists the chosen provider\'s models and the efforts its model takes; the task gets both', { timeout: 150000 }, async () => {
  await providers();
  const { helper, llm } = env;
  // The default provider's list is slow: the user picks another
  // provider before it comes, and it must not replace that one's list.
  llm.modelsDelayMs = 2500;
  const page = await env.page('/');
  await page.waitForSelector('#task-provider option[value="Thinker"]', { state: 'attached' });
  assert.equal(await page.inputValue('#task-provider'), 'Scripted');
  assert.deepEqual((await modelPicker(page)).options, [''], 'the list says it is loading');
  assert.ok(await page.isDisabled('#task-model'));
  assert.match(await page.textContent('#task-model'), /Loading Scripted's models/);
  await page.selectOption('#task-provider', 'Thinker');
  await page.waitForFunction(() => document.getElementById('task-model').value === 'think-fast');
  await new Promise((r) => setTimeout(r, 3000)); // the slow list has come meanwhile
  let m = await modelPicker(page);
  assert.deepEqual(m.options, ['think-deep', 'think-fast', ''], "only Thinker's models are listed");
  assert.equal(m.value, 'think-fast', "Thinker's default model is chosen");
  assert.ok(m.listShown && !m.typedShown);
  assert.match(await page.textContent('#task-model option[value="think-deep"]'), /Think Deep \(think-deep\)/);
  assert.match(await page.textContent('#task-model option[value="think-fast"]'), /default/);
  llm.modelsDelayMs = 0;

  // think-fast turns reasoning on or off; think-deep takes efforts.
  assert.deepEqual(await efforts(page), ['', 'off', 'on']);
  await page.selectOption('#task-model', 'think-deep');
  assert.deepEqual(await efforts(page), ['', 'low', 'medium', 'high']);
  assert.match(await page.textContent('#task-reasoning option[value=""]'), /Model default \(medium\)/);
  await page.selectOption('#task-reasoning', 'high');

  // Back on the default provider: its models, its default, no effort to choose.
  await page.selectOption('#task-provider', 'Scripted');
  await page.waitForFunction(() => document.getElementById('task-model').value === 'scripted-large');
  assert.deepEqual((await modelPicker(page)).options, ['scripted-large', 'scripted-small', '']);
  assert.deepEqual(await efforts(page), ['']);
  assert.ok(await page.isDisabled('#task-reasoning'));
  assert.match(await page.textContent('#reasoning-hint'), /takes no reasoning setting/);

  // A provider whose list is refused: the model is typed, and the hint says why.
  await page.selectOption('#task-provider', 'Broken');
  await page.waitForSelector('#task-model-text:not([hidden])');
  m = await modelPicker(page);
  assert.ok(!m.listShown, 'no list is shown');
  assert.equal(m.typed, 'broken-1', "Broken's default model is typed in");
  assert.match(m.hint, /Could not list Broken's models \(.*this key may not list models.*\): type a model id/);
  assert.equal(await page.getAttribute('#task-model-label', 'for'), 'task-model-text');
  assert.deepEqual(await efforts(page), ['', 'off', 'low', 'medium', 'high'], 'every choice for a model the list does not describe');
  await shot(page, 'models-typed');

  // Thinker again (its list is kept): think-deep at high effort.
  await page.selectOption('#task-provider', 'Thinker');
  await page.waitForFunction(() => document.getElementById('task-model').value === 'think-fast');
  assert.equal((await modelPicker(page)).hint, '');
  await page.selectOption('#task-model', 'think-deep');
  await page.selectOption('#task-reasoning', 'high');
  const M = '[[deep-thought]]';
  await page.fill('#task-description', `Think hard about this ${M}`);
  await shot(page, 'models-effort');

  // Saved as a preset, the form keeps the model and the effort.
  await page.click('#save-preset');
  await page.fill('#preset-name', 'Deep thought');
  await page.click('#preset-save-confirm');
  await page.locator('#presets li[data-preset="Deep thought"]').waitFor();
  const { presets } = await helper.api('GET', '/api/v1/presets');
  const preset = presets.find((p) => p.name === 'Deep thought');
  assert.equal(preset.task.providerName, 'Thinker');
  assert.equal(preset.task.modelId, 'think-deep');
  assert.equal(preset.task.reasoningEffort, 'high');

  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[^/]+$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  const created = await helper.task(id);
  assert.equal(created.providerName, 'Thinker');
  assert.equal(created.modelId, 'think-deep');
  assert.equal(created.reasoningEffort, 'high');
  assert.equal(created.reasoningEnabled, undefined);
  // The agent asks Thinker for think-deep at high effort.
  const bodies = await eventually('the agent\'s request to Thinker', () => thinker.requests.length > 0 && thinker.requests, 90000);
  const first = JSON.parse(bodies[0].body);
  assert.equal(first.model, 'think-deep');
  assert.equal(first.reasoning_effort, 'high');
  assert.equal(llm.requests.filter((r) => r.body.includes(M)).length, 0, 'the default provider was not asked');
  await helper.waitTask(id, 'the end', (t) => t.status === 'completed', 90000);
  await env.done(page);
});

test('a toggle model turned off, and a model typed by hand, reach the task', { timeout: 150000 }, async () => {
  await providers();
  const { helper } = env;
  const page = await env.page('/');
  await page.waitForSelector('#task-provider option[value="Thinker"]', { state: 'attached' });
  await page.selectOption('#task-provider', 'Thinker');
  await page.waitForFunction(() => document.getElementById('task-model').value === 'think-fast');
  await page.selectOption('#task-reasoning', 'off');
  // "Other model…": typed, and every reasoning choice offered again.
  await page.selectOption('#task-model', '');
  await page.waitForSelector('#task-model-text:not([hidden])');
  assert.ok(await page.isVisible('#task-model'), 'the list stays to choose from');
  assert.deepEqual(await efforts(page), ['', 'off', 'low', 'medium', 'high']);
  assert.equal(await page.inputValue('#task-reasoning'), 'off', 'the choice is kept');
  await page.fill('#task-model-text', 'think-custom');
  await page.fill('#task-description', 'Do not think [[no-thought]]');
  await page.click('#start-task');
  await page.waitForURL(/\/tasks\/[^/]+$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  const created = await helper.task(id);
  assert.equal(created.modelId, 'think-custom');
  assert.equal(created.reasoningEnabled, false);
  assert.equal(created.reasoningEffort, undefined);
  await helper.waitTask(id, 'the end', (t) => t.status === 'completed', 90000);
  const body = thinker.requests.map((r) => JSON.parse(r.body)).find((b) => JSON.stringify(b).includes('[[no-thought]]'));
  assert.equal(body.model, 'think-custom');
  assert.equal(body.reasoning_effort, undefined, 'no effort is asked for');
  await env.done(page);
});
