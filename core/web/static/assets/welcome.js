// Onboarding: connect a provider (tested at once), choose its default
// model, then a first task suggestion.
import { $, fill, get, h, initChrome, patch, post, report, seg } from './common.js';
import { apiLabel, baseURLHint, providerType } from './providertypes.js';

initChrome();

// The services offered: the vendors' own APIs as their provider types,
// the rest OpenAI-compatible endpoints.
const PRESETS = {
  anthropic: { name: 'Anthropic', type: 'anthropic', key: true },
  openai: { name: 'OpenAI', type: 'openai', key: true },
  openrouter: { name: 'OpenRouter', type: 'openai-compatible', url: 'https://openrouter.ai/api/v1', key: true },
  ollama: { name: 'Ollama', type: 'openai-compatible', url: 'http://localhost:11434/v1', key: false },
  lmstudio: { name: 'LM Studio', type: 'openai-compatible', url: 'http://localhost:1234/v1', key: false },
  vllm: { name: 'vLLM', type: 'openai-compatible', url: 'http://localhost:8000/v1', key: false },
  custom: { name: '', type: 'openai-compatible', url: '', key: true },
};

let provider = null; // the provider this page created

function applyPreset() {
  const p = PRESETS[$('#onboard-preset').value];
  const t = providerType(p.type);
  $('#onboard-name').value = p.name;
  $('#onboard-url').value = p.url ?? t.baseURL;
  showURLHint();
  $('#onboard-type').textContent = `Provider type: ${t.label} (${apiLabel({ type: t.type, backendMode: t.backend })}).`;
  $('#onboard-key').placeholder = p.key ? 'Paste your API key' : 'Not needed for a local server';
}

// showURLHint says where a vendor's base URL comes from, and what any
// OpenAI-compatible address looks like; a local server's needs nothing.
function showURLHint() {
  const p = PRESETS[$('#onboard-preset').value];
  $('#onboard-url-hint').textContent = p.type === 'openai-compatible' && p.url ? '' : baseURLHint(p.type, $('#onboard-url').value);
}

function step(n) {
  for (let i = 1; i <= 3; i++) {
    const li = $(`#step-${i}`);
    if (i === n) li.setAttribute('aria-current', 'step'); else li.removeAttribute('aria-current');
  }
}

async function connect(e) {
  e.preventDefault();
  const status = $('#onboard-status');
  const keyInput = $('#onboard-key');
  const key = keyInput.value.trim();
  const body = { type: PRESETS[$('#onboard-preset').value].type, displayName: $('#onboard-name').value.trim(), baseURL: $('#onboard-url').value.trim() };
  if (!body.displayName || !body.baseURL) {
    status.className = 'test-result bad';
    status.textContent = 'A name and a base URL are needed.';
    return;
  }
  if (key) body.apiKey = key;
  keyInput.value = '';
  $('#onboard-connect').disabled = true;
  status.className = 'test-result';
  status.textContent = 'Connecting…';
  try {
    provider = provider
      ? await patch(`/providers/${seg(provider.id)}`, body)
      : await post('/providers', { ...body, isDefault: true });
    const res = await post(`/providers/${seg(provider.id)}/test`);
    if (!res.ok) {
      status.className = 'test-result bad';
      status.textContent = `The provider did not answer: ${res.message}. Check the URL and key, then try again.`;
      return;
    }
    status.className = 'test-result ok';
    status.textContent = `Connected (${Math.round(res.latencyMs)} ms).`;
    await showModels();
  } catch (err) {
    status.className = 'test-result bad';
    status.textContent = err.message;
  } finally {
    $('#onboard-connect').disabled = false;
  }
}

async function showModels() {
  step(2);
  $('#model-step').hidden = false;
  const input = $('#onboard-model-id');
  try {
    const res = await get(`/providers/${seg(provider.id)}/models`);
    fill($('#onboard-models'), res.models.map((m) => h('option', { value: m.id })));
    if (!input.value && res.models.length) input.value = res.models[0].id;
  } catch {
    // Some providers do not list models; the field is free text.
  }
  input.focus();
}

async function chooseModel(e) {
  e.preventDefault();
  const model = $('#onboard-model-id').value.trim();
  if (!model) return;
  try {
    provider = await patch(`/providers/${seg(provider.id)}`, { defaultModelId: model });
    step(3);
    const box = $('#first-task-step');
    box.hidden = false;
    $('#use-suggestion').href = `/?describe=${encodeURIComponent($('#suggestion-text').textContent.trim())}`;
    $('#use-suggestion').focus();
  } catch (err) { report(err); }
}

// offerIsolation offers to build the Linux desktop template while only the
// host template exists.
async function offerIsolation() {
  const res = await get('/templates');
  if (res.templates.some((t) => t.kind === 'rootfs')) return;
  $('#isolation-offer').hidden = false;
  $('#build-desktop').addEventListener('click', async () => {
    $('#build-desktop').disabled = true;
    try {
      const t = await post('/templates', { manifest: 'linux-desktop' });
      $('#build-desktop-status').textContent = `Building ${t.name}: Settings › Templates shows its progress; make it the default there when it is ready.`;
    } catch (err) {
      $('#build-desktop').disabled = false;
      report(err);
    }
  });
}

async function start() {
  $('#onboard-preset').addEventListener('change', applyPreset);
  $('#onboard-url').addEventListener('input', showURLHint);
  $('#onboard-provider').addEventListener('submit', connect);
  $('#onboard-model').addEventListener('submit', chooseModel);
  applyPreset();
  const res = await get('/providers');
  if (res.providers.length > 0) {
    $('#already-set').hidden = false;
    $('#provider-step').hidden = true;
    $('#first-task-step').hidden = false;
    $('#use-suggestion').href = `/?describe=${encodeURIComponent($('#suggestion-text').textContent.trim())}`;
    step(3);
  }
  await offerIsolation();
}

start().catch(report);
