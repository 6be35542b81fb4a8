// Settings: providers (add, edit, test, remove; keys are write-only), VM
// and task defaults, templates, files and network, safety, advanced and API
// keys. Each section saves only its own settings.
import { $, del, fill, fmtTime, get, h, initChrome, patch, post, report, seg, toast } from './common.js';
import { AGENT_TOOLS, OPEN_TERMINAL } from './tools.js';

initChrome();

const byId = (id) => document.getElementById(id);

let settings = null;

// ---- Providers -------------------------------------------------------------

async function loadProviders() {
  const res = await get('/providers');
  const list = $('#provider-list');
  if (res.providers.length === 0) {
    fill(list, h('p', { class: 'notice warn' }, 'No provider yet: add one below, or use the ', h('a', { href: '/welcome' }, 'guided setup'), '.'));
    $('#add-provider-box').open = true;
    return;
  }
  fill(list, res.providers.map(providerCard));
}

function providerCard(p) {
  const result = h('span', { class: 'test-result', role: 'status' });
  const card = h('article', { class: 'provider', 'data-provider': p.displayName, 'aria-labelledby': `prov-${p.id}` },
    h('h3', { id: `prov-${p.id}` }, p.displayName,
      p.isDefault ? h('span', { class: 'badge completed' }, 'default') : null,
      h('span', { class: 'badge' }, p.hasAPIKey ? 'key stored' : 'no key')),
    h('p', { class: 'muted' }, h('code', null, p.baseURL), ` · ${p.backendMode === 'responses' ? 'Responses' : 'Chat Completions'}`,
      p.defaultModelId ? ` · default model ${p.defaultModelId}` : ' · no default model',
      p.defaultReasoningEffort ? ` · reasoning ${p.defaultReasoningEffort}` : ''),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'small', 'aria-expanded': 'false', 'data-edit': p.id }, 'Edit'),
      h('button', { type: 'button', class: 'small', onclick: () => testProvider(p, result) }, 'Test connection'),
      p.isDefault ? null : h('button', { type: 'button', class: 'small', onclick: () => savePatch(p, { isDefault: true }) }, 'Make default'),
      h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${p.displayName}`, onclick: () => removeProvider(p) }, 'Remove'),
      result));
  const form = editForm(p);
  form.hidden = true;
  card.append(form);
  const btn = card.querySelector('[data-edit]');
  btn.addEventListener('click', () => {
    form.hidden = !form.hidden;
    btn.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) {
      form.querySelector('input').focus();
      loadModelOptions(p, form.querySelector('datalist'));
    }
  });
  return card;
}

function editForm(p) {
  const f = (name) => `edit-${p.id}-${name}`;
  const form = h('form', { class: 'card', autocomplete: 'off', 'aria-label': `Edit ${p.displayName}` },
    h('div', { class: 'form-grid' },
      h('div', { class: 'field' }, h('label', { for: f('name') }, 'Name'), h('input', { type: 'text', id: f('name'), value: p.displayName, required: true })),
      h('div', { class: 'field' }, h('label', { for: f('url') }, 'Base URL'), h('input', { type: 'url', id: f('url'), value: p.baseURL, required: true, spellcheck: 'false' })),
      h('div', { class: 'field' }, h('label', { for: f('key') }, 'New API key'),
        h('input', { type: 'password', id: f('key'), autocomplete: 'new-password', spellcheck: 'false', placeholder: p.hasAPIKey ? 'Leave empty to keep the stored key' : 'No key stored' })),
      h('div', { class: 'field' }, h('label', { for: f('model') }, 'Default model'),
        h('input', { type: 'text', id: f('model'), value: p.defaultModelId || '', list: f('models'), spellcheck: 'false' }),
        h('datalist', { id: f('models') })),
      h('div', { class: 'field' }, h('label', { for: f('mode') }, 'API'),
        h('select', { id: f('mode') },
          h('option', { value: 'chat_completions', selected: p.backendMode !== 'responses' }, 'Chat Completions'),
          h('option', { value: 'responses', selected: p.backendMode === 'responses' }, 'Responses'))),
      h('div', { class: 'field' }, h('label', { for: f('reasoning') }, 'Reasoning effort of its tasks'),
        h('select', { id: f('reasoning') },
          ['', 'none', 'minimal', 'low', 'medium', 'high', 'xhigh'].map((v) => h('option', { value: v, selected: (p.defaultReasoningEffort || '') === v }, v || "The model's default")))),
      h('div', { class: 'field' }, h('label', { for: f('timeout') }, 'Timeout (seconds, 0 = default)'),
        h('input', { type: 'number', id: f('timeout'), min: '0', max: '3600', value: String(p.timeoutInterval || 0) }))),
    p.hasAPIKey ? h('label', { class: 'check' }, h('input', { type: 'checkbox', id: f('clear') }), 'Remove the stored key') : null,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save provider')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = {};
    const name = byId(f('name')).value.trim();
    const url = byId(f('url')).value.trim();
    const model = byId(f('model')).value.trim();
    const mode = byId(f('mode')).value;
    const timeout = Number(byId(f('timeout')).value || 0);
    const keyInput = byId(f('key'));
    if (name !== p.displayName) body.displayName = name;
    if (url !== p.baseURL) body.baseURL = url;
    if (model !== (p.defaultModelId || '')) body.defaultModelId = model;
    if (mode !== p.backendMode) body.backendMode = mode;
    const reasoning = byId(f('reasoning')).value;
    if (reasoning !== (p.defaultReasoningEffort || '')) body.defaultReasoningEffort = reasoning;
    if (timeout !== (p.timeoutInterval || 0)) body.timeoutInterval = timeout;
    if (keyInput.value.trim()) body.apiKey = keyInput.value.trim();
    else if (p.hasAPIKey && byId(f('clear')).checked) body.apiKey = '';
    keyInput.value = '';
    await savePatch(p, body);
  });
  return form;
}

async function loadModelOptions(p, list) {
  try {
    const res = await get(`/providers/${seg(p.id)}/models`);
    fill(list, res.models.map((m) => h('option', { value: m.id })));
  } catch {
    // Not every provider lists its models.
  }
}

async function savePatch(p, body) {
  if (Object.keys(body).length === 0) {
    toast('Nothing changed.');
    return;
  }
  try {
    const out = await patch(`/providers/${seg(p.id)}`, body);
    toast(`Saved ${out.displayName}.`);
    await loadProviders();
  } catch (err) { report(err); }
}

async function testProvider(p, out) {
  out.className = 'test-result';
  out.textContent = 'Testing…';
  try {
    const res = await post(`/providers/${seg(p.id)}/test`);
    out.className = `test-result ${res.ok ? 'ok' : 'bad'}`;
    out.textContent = res.ok ? `Connected (${Math.round(res.latencyMs)} ms)` : `Failed: ${res.message}`;
  } catch (err) {
    out.className = 'test-result bad';
    out.textContent = `Failed: ${err.message}`;
  }
}

async function removeProvider(p) {
  if (!confirm(`Remove the provider ${p.displayName} and its stored key?`)) return;
  try {
    await del(`/providers/${seg(p.id)}`);
    toast(`Removed ${p.displayName}.`);
    await loadProviders();
  } catch (err) { report(err); }
}

$('#add-provider').addEventListener('submit', async (e) => {
  e.preventDefault();
  const key = $('#new-provider-key');
  const body = {
    displayName: $('#new-provider-name').value.trim(),
    baseURL: $('#new-provider-url').value.trim(),
    backendMode: $('#new-provider-mode').value,
    isDefault: $('#new-provider-default').checked,
  };
  if (!body.displayName || !body.baseURL) {
    toast('A provider needs a name and a base URL.', 'error');
    return;
  }
  const model = $('#new-provider-model').value.trim();
  if (model) body.defaultModelId = model;
  if (key.value.trim()) body.apiKey = key.value.trim();
  key.value = '';
  try {
    const p = await post('/providers', body);
    toast(`Added ${p.displayName}.`);
    e.target.reset();
    $('#add-provider-box').open = false;
    await loadProviders();
  } catch (err) { report(err); }
});

// ---- Settings sections -------------------------------------------------------

function fillSettings(s) {
  settings = s;
  for (const input of document.querySelectorAll('[data-key]')) {
    const v = s[input.dataset.key];
    if (input.type === 'checkbox') input.checked = !!v;
    else if (Array.isArray(v)) input.value = v.join('\n');
    else input.value = v === null || v === undefined ? '' : String(v);
  }
  const policy = s.toolPolicy || {};
  // open_terminal follows run_shell unless it is set (its empty option).
  const choices = (tool) => (tool === OPEN_TERMINAL ? ['', 'allow', 'ask', 'deny'] : ['allow', 'ask', 'deny']);
  // What the helper does for a tool the policy does not name.
  const current = (tool) => policy[tool] || (tool === OPEN_TERMINAL ? '' : tool === 'use_credential' ? 'ask' : 'allow');
  fill($('#policy-grid'), [...AGENT_TOOLS, OPEN_TERMINAL].map((tool) => h('div', { class: 'field' },
    h('label', { for: `sp-${tool}` }, tool),
    h('select', { id: `sp-${tool}`, 'data-tool': tool },
      choices(tool).map((p) => h('option', { value: p, selected: current(tool) === p }, p || 'as run_shell'))))));
}

async function loadSettings() {
  fillSettings(await get('/settings'));
}

for (const form of document.querySelectorAll('[data-settings-form]')) {
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = {};
    for (const input of form.querySelectorAll('[data-key]')) {
      const k = input.dataset.key;
      if (input.type === 'checkbox') body[k] = input.checked;
      else if (input.dataset.list !== undefined) body[k] = input.value.split('\n').map((l) => l.trim()).filter((l) => l);
      else if (input.type === 'number') body[k] = Number(input.value);
      else body[k] = input.value.trim();
    }
    if (form.id === 'safety-form') {
      const policy = {};
      for (const s of form.querySelectorAll('select[data-tool]')) {
        // Only what differs from the helper's own default is stored (so
        // use_credential's ask stays the default, and allow is said).
        const def = s.dataset.tool === 'use_credential' ? 'ask' : 'allow';
        if (s.value !== '' && (s.value !== def || s.dataset.tool === OPEN_TERMINAL)) policy[s.dataset.tool] = s.value;
      }
      body.toolPolicy = policy;
    }
    try {
      fillSettings(await patch('/settings', body));
      toast('Settings saved.');
    } catch (err) { report(err); }
  });
}

// ---- Templates ---------------------------------------------------------------

async function loadTemplates() {
  const res = await get('/templates');
  fill($('#template-rows'), res.templates.map((t) => {
    const radio = h('input', { type: 'radio', name: 'default-template', value: t.id, checked: t.id === res.defaultTemplateId,
      'aria-label': `Use ${t.name} by default` });
    radio.addEventListener('change', async () => {
      try {
        fillSettings(await patch('/settings', { defaultTemplateId: t.id }));
        toast(`${t.name} is the default template.`);
      } catch (err) { report(err); }
    });
    return h('tr', null, h('td', null, t.name, t.description ? h('div', { class: 'hint' }, t.description) : null),
      h('td', null, t.os), h('td', { class: 'hide-narrow' }, t.kind, h('div', { class: 'hint' }, isolation(t.kind))), h('td', null, radio));
  }));
}

// What a template kind isolates, in a few words.
function isolation(kind) {
  switch (kind) {
    case 'host': return "Runs this computer's programs, read-only; less isolated than a built template.";
    case 'rootfs': return 'A root filesystem of its own: more isolated than the host template.';
    default: return 'A full virtual machine.';
  }
}

// ---- API keys ------------------------------------------------------------------

async function loadAPIKeys() {
  const res = await get('/apikeys');
  const rows = res.keys.filter((k) => !k.revokedAt);
  fill($('#apikey-rows'), rows.length === 0 ? h('tr', null, h('td', { colspan: '5', class: 'muted' }, 'No API keys.')) : rows.map((k) =>
    h('tr', null, h('td', null, k.name), h('td', { class: 'mono' }, `${k.prefix}…`), h('td', { class: 'hide-narrow' }, fmtTime(k.createdAt)),
      h('td', { class: 'hide-narrow' }, k.lastUsedAt ? fmtTime(k.lastUsedAt) : 'never'),
      h('td', null, h('button', { type: 'button', class: 'small danger', 'aria-label': `Revoke ${k.name}`, onclick: () => revoke(k) }, 'Revoke')))));
}

async function revoke(k) {
  if (!confirm(`Revoke the key ${k.name}? Scripts using it stop working.`)) return;
  try {
    await del(`/apikeys/${seg(k.id)}`);
    toast(`Revoked ${k.name}.`);
    $('#apikey-created').hidden = true;
    await loadAPIKeys();
  } catch (err) { report(err); }
}

$('#new-apikey').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = $('#apikey-name').value.trim();
  if (!name) return;
  try {
    const k = await post('/apikeys', { name });
    $('#apikey-name').value = '';
    const box = $('#apikey-created');
    fill(box, h('p', null, `The key ${k.name} (shown this once; copy it now):`), h('p', { class: 'secret-shown' }, k.key));
    box.hidden = false;
    await loadAPIKeys();
  } catch (err) { report(err); }
});

// ---- Credentials -----------------------------------------------------------

async function loadCredentials() {
  const res = await get('/credentials');
  const list = $('#credential-list');
  if (res.credentials.length === 0) {
    fill(list, h('p', { class: 'muted' }, 'No credentials yet.'));
    return;
  }
  fill(list, h('ul', { class: 'plain' }, res.credentials.map((c) => h('li', { 'data-credential': c.name },
    h('strong', null, c.name),
    ` · ${c.username || 'no username'} · ${c.hasPassword ? 'password stored' : 'no password'}${c.hasTOTP ? ' · one-time codes' : ''}`,
    c.allowedApps.length ? ` · only in ${c.allowedApps.join(', ')}` : ' · any application',
    ' ',
    h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${c.name}`, onclick: () => removeCredential(c) }, 'Remove')))));
}

async function removeCredential(c) {
  if (!confirm(`Remove the credential ${c.name} and its stored secrets?`)) return;
  try {
    await del(`/credentials/${seg(c.id)}`);
    toast(`Removed ${c.name}.`);
    await loadCredentials();
  } catch (err) { report(err); }
}

$('#add-credential').addEventListener('submit', async (e) => {
  e.preventDefault();
  const secretInputs = [$('#new-credential-password'), $('#new-credential-totp')];
  const body = {
    name: $('#new-credential-name').value.trim(),
    username: $('#new-credential-username').value.trim(),
    password: $('#new-credential-password').value,
    totpSeed: $('#new-credential-totp').value.trim(),
    allowedApps: $('#new-credential-apps').value.split('\n').map((l) => l.trim()).filter((l) => l),
  };
  for (const i of secretInputs) i.value = ''; // never left in the page
  try {
    const c = await post('/credentials', body);
    toast(`Stored ${c.name}.`);
    e.target.reset();
    $('#add-credential-box').open = false;
    await loadCredentials();
  } catch (err) { report(err); }
});

Promise.all([loadProviders(), loadSettings(), loadTemplates(), loadAPIKeys(), loadCredentials()]).catch(report);
