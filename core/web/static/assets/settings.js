// Settings: providers (add, edit, test, remove; keys are write-only),
// credentials, skills, MCP servers, web search, notifications, webhooks,
// provisioning (provisioning.js), VM and task defaults,
// templates, files and network, safety, paired devices (devices.js),
// advanced and API keys. Each section saves only its own settings.
import { $, del, fill, fmtTime, get, h, initChrome, pairs, patch, post, put, report, seg, toast } from './common.js';
import { loadDevices } from './devices.js';
import { initImport, templateActions } from './templateshare.js';
import { apiLabel, followType, providerType, typeOptions } from './providertypes.js';
import { initCredentials } from './credentials.js';
import { initProvisioning } from './provisioning.js';
import { AGENT_TOOLS, HOST_TOOLS, OPEN_TERMINAL, mcpTools } from './tools.js';

initChrome();

const byId = (id) => document.getElementById(id);

let settings = null;
let mcpServers = [];

/** Asks, removes what path names, says so and reloads its list. */
async function remove(question, path, name, reload) {
  if (!confirm(question)) return;
  try {
    await del(path);
    toast(`Removed ${name}.`);
    await reload();
  } catch (err) { report(err); }
}

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
  fill($('#worker-providers'), res.providers.map((p) => h('option', { value: p.displayName })));
}

function providerCard(p) {
  const result = h('span', { class: 'test-result', role: 'status' });
  const card = h('article', { class: 'provider', 'data-provider': p.displayName, 'aria-labelledby': `prov-${p.id}` },
    h('h3', { id: `prov-${p.id}` }, p.displayName,
      p.isDefault ? h('span', { class: 'badge completed' }, 'default') : null,
      h('span', { class: 'badge' }, p.hasAPIKey ? 'key stored' : 'no key')),
    h('p', { class: 'muted' }, `${providerType(p.type).label} · `, h('code', null, p.baseURL), ` · ${apiLabel(p)}`,
      p.defaultModelId ? ` · default model ${p.defaultModelId}` : ' · no default model',
      p.defaultReasoningEffort ? ` · reasoning ${p.defaultReasoningEffort}` : ''),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'small', 'aria-expanded': 'false', 'data-edit': p.id }, 'Edit'),
      h('button', { type: 'button', class: 'small', onclick: () => testProvider(p, result) }, 'Test connection'),
      p.isDefault ? null : h('button', { type: 'button', class: 'small', onclick: () => savePatch(p, { isDefault: true }) }, 'Make default'),
      h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${p.displayName}`, onclick: () => remove(`Remove the provider ${p.displayName} and its stored key?`, `/providers/${seg(p.id)}`, p.displayName, loadProviders) }, 'Remove'),
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
      h('div', { class: 'field' }, h('label', { for: f('type') }, 'Type'), h('select', { id: f('type') }, typeOptions(providerType(p.type).type))),
      h('div', { class: 'field' }, h('label', { for: f('name') }, 'Name'), h('input', { type: 'text', id: f('name'), value: p.displayName, required: true })),
      h('div', { class: 'field' }, h('label', { for: f('url') }, 'Base URL'),
        h('input', { type: 'url', id: f('url'), value: p.baseURL, required: true, spellcheck: 'false', 'aria-describedby': f('url-hint') }),
        h('span', { id: f('url-hint'), class: 'hint' })),
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
  const field = (name) => form.querySelector(`#${CSS.escape(f(name))}`);
  followType({ type: field('type'), url: field('url'), hint: field('url-hint'), mode: field('mode') });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const body = {};
    const type = byId(f('type')).value;
    if (type !== p.type) body.type = type;
    const name = byId(f('name')).value.trim();
    const url = byId(f('url')).value.trim();
    const model = byId(f('model')).value.trim();
    const mode = byId(f('mode')).value;
    const timeout = Number(byId(f('timeout')).value || 0);
    const keyInput = byId(f('key'));
    if (name !== p.displayName) body.displayName = name;
    if (url !== p.baseURL) body.baseURL = url;
    if (model !== (p.defaultModelId || '')) body.defaultModelId = model;
    // An anthropic provider has no API to choose; a new type without
    // one takes its default.
    if (type !== 'anthropic' && mode !== p.backendMode) body.backendMode = mode;
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


fill($('#new-provider-type'), typeOptions('openai-compatible'));
followType({ type: $('#new-provider-type'), url: $('#new-provider-url'), hint: $('#new-provider-url-hint'), mode: $('#new-provider-mode') });

$('#add-provider').addEventListener('submit', async (e) => {
  e.preventDefault();
  const key = $('#new-provider-key');
  const body = {
    type: $('#new-provider-type').value,
    displayName: $('#new-provider-name').value.trim(),
    baseURL: $('#new-provider-url').value.trim(),
    isDefault: $('#new-provider-default').checked,
  };
  if (body.type !== 'anthropic') body.backendMode = $('#new-provider-mode').value;
  if (!body.displayName || (!body.baseURL && !providerType(body.type).baseURL)) {
    toast('A provider needs a name and, unless Anthropic or OpenAI, a base URL.', 'error');
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
    $('#new-provider-type').dispatchEvent(new Event('change'));
    $('#add-provider-box').open = false;
    await loadProviders();
  } catch (err) { report(err); }
});

// ---- Settings sections -------------------------------------------------------

// Fills the page from the helper's settings: all of it on load, and after
// one section's save only that section, so what is being edited in another
// section is not put back to its saved value under the user's hands.
function fillSettings(s, section) {
  settings = s;
  for (const input of (section || document).querySelectorAll('[data-key]')) {
    const v = s[input.dataset.key];
    if (input.type === 'checkbox') input.checked = !!v;
    else if (Array.isArray(v)) input.value = v.join('\n');
    else input.value = v === null || v === undefined ? '' : String(v);
  }
  if (!section || section.id === 'safety-form') renderPolicy();
  if (!section || section.id === 'web-search-form') renderWebSearch();
  if (!section || section.id === 'notify-form') renderNotify();
}

// The policy editor: the VM's tools, the host's, and each MCP server's
// (all its tools at once; a policy naming one of them is kept as it is).
// keepEdits re-renders around choices not saved yet (an MCP server was added
// or removed while the user was choosing).
function renderPolicy(keepEdits) {
  if (!settings) return;
  const edits = {};
  if (keepEdits) {
    for (const s of document.querySelectorAll('#policy-grid select[data-tool]')) {
      if (s.value !== s.dataset.saved) edits[s.dataset.tool] = s.value;
    }
  }
  const policy = settings.toolPolicy || {};
  // open_terminal follows run_shell unless it is set (its empty option);
  // an MCP server's tools follow the server's own permission.
  const choices = (tool) => (tool === OPEN_TERMINAL || tool.startsWith('mcp__') ? ['', 'allow', 'ask', 'deny'] : ['allow', 'ask', 'deny']);
  // What the helper does for a tool the policy does not name.
  const current = (tool) => policy[tool] || (tool === OPEN_TERMINAL || tool.startsWith('mcp__') ? '' : tool === 'use_credential' ? 'ask' : 'allow');
  const unset = (tool) => (tool === OPEN_TERMINAL ? 'as run_shell' : `the server's: ${mcpServers.find((m) => mcpTools(m.name) === tool)?.permission || 'ask'}`);
  const row = (tool) => h('div', { class: 'field' },
    h('label', { for: `sp-${tool}` }, tool),
    h('select', { id: `sp-${tool}`, 'data-tool': tool, 'data-saved': current(tool) },
      choices(tool).map((p) => h('option', { value: p, selected: (edits[tool] ?? current(tool)) === p }, p || unset(tool)))));
  fill($('#policy-grid'),
    h('h3', { class: 'group' }, 'In the VM'), [...AGENT_TOOLS, OPEN_TERMINAL].map(row),
    h('h3', { class: 'group' }, 'On this computer'), HOST_TOOLS.map(row),
    mcpServers.length ? [h('h3', { class: 'group' }, 'MCP servers (all of a server\'s tools)'), mcpServers.map((m) => row(mcpTools(m.name)))] : null);
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
      // What the editor does not show (one MCP tool by name, a removed
      // server's) is kept as it is.
      const policy = {};
      const shown = new Set([...form.querySelectorAll('select[data-tool]')].map((s) => s.dataset.tool));
      for (const [tool, perm] of Object.entries(settings.toolPolicy || {})) {
        if (!shown.has(tool)) policy[tool] = perm;
      }
      for (const s of form.querySelectorAll('select[data-tool]')) {
        // Only what differs from the helper's own default is stored (so
        // use_credential's ask stays the default, and allow is said).
        const tool = s.dataset.tool;
        const def = tool === 'use_credential' ? 'ask' : 'allow';
        if (s.value !== '' && (s.value !== def || tool === OPEN_TERMINAL || tool.startsWith('mcp__'))) policy[tool] = s.value;
      }
      body.toolPolicy = policy;
    }
    try {
      fillSettings(await patch('/settings', body), form);
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
    const agent = t.agentVersion ? `${t.agentVersion}${t.agentOutdated ? ' (outdated)' : ''}` : '–';
    return h('tr', { 'data-template-row': t.id }, h('td', null, t.name, t.description ? h('div', { class: 'hint' }, t.description) : null),
      h('td', null, t.os), h('td', { class: 'hide-narrow' }, t.kind, h('div', { class: 'hint' }, isolation(t.kind))),
      h('td', { class: 'hide-narrow', 'data-template-agent': t.id }, agent), h('td', null, radio), h('td', null, templateActions(t, loadTemplates)));
  }));
}
initImport(loadTemplates);

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

// ---- Skills ------------------------------------------------------------------

async function loadSkills() {
  const res = await get('/skills');
  const problems = $('#skill-problems');
  problems.hidden = !(res.problems && res.problems.length);
  if (!problems.hidden) {
    fill(problems, h('p', null, 'Folders of the skill library that are not skills:'),
      h('ul', null, res.problems.map((p) => h('li', null, p))));
  }
  const list = $('#skill-list');
  if (res.skills.length === 0) {
    fill(list, h('p', { class: 'muted' }, 'No skills yet: write one, import one, or save one from a finished task.'));
    return;
  }
  fill(list, res.skills.map(skillCard));
}

function skillCard(s) {
  const id = `skill-${s.name}`;
  const toggle = h('input', { type: 'checkbox', checked: s.isEnabled, 'aria-label': `@${s.name} on`, 'aria-describedby': id });
  toggle.addEventListener('change', async () => {
    try {
      await patch(`/skills/${seg(s.name)}`, { isEnabled: toggle.checked });
      toast(toggle.checked ? `Tasks are told of ${s.name}.` : `Tasks are not told of ${s.name}.`);
      await loadSkills();
    } catch (err) {
      toggle.checked = !toggle.checked;
      report(err);
    }
  });
  const editBox = h('div', { hidden: true });
  const edit = h('button', { type: 'button', class: 'small', 'aria-expanded': 'false' }, 'Edit');
  edit.addEventListener('click', async () => {
    if (!editBox.hidden) {
      editBox.hidden = true;
      edit.setAttribute('aria-expanded', 'false');
      return;
    }
    try {
      fill(editBox, skillEditForm(await get(`/skills/${seg(s.name)}`)));
      editBox.hidden = false;
      edit.setAttribute('aria-expanded', 'true');
      editBox.querySelector('input').focus();
    } catch (err) { report(err); }
  });
  return h('article', { class: `entry${s.isEnabled ? '' : ' off'}`, 'data-skill': s.name, 'aria-labelledby': `${id}-name` },
    h('h3', { id: `${id}-name` }, h('code', null, `@${s.name}`), s.isEnabled ? null : h('span', { class: 'badge' }, 'off')),
    h('p', { id, class: 'muted' }, s.description),
    h('div', { class: 'actions' },
      h('label', { class: 'check' }, toggle, 'On'),
      edit,
      h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${s.name}`, onclick: () => remove(`Remove the skill ${s.name} and its files?`, `/skills/${seg(s.name)}`, s.name, loadSkills) }, 'Remove')),
    editBox);
}

function skillEditForm(s) {
  const f = (n) => `edit-skill-${s.name}-${n}`;
  const form = h('form', { class: 'card', 'aria-label': `Edit ${s.name}` },
    h('div', { class: 'field' }, h('label', { for: f('description') }, 'Description'),
      h('input', { type: 'text', id: f('description'), value: s.description, required: true, maxlength: '1024' })),
    h('div', { class: 'field' }, h('label', { for: f('instructions') }, 'Instructions'),
      h('textarea', { id: f('instructions'), class: 'large', value: s.instructions, required: true })),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save skill')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await put(`/skills/${seg(s.name)}`, { description: $(`#${f('description')}`).value.trim(), instructions: $(`#${f('instructions')}`).value });
      toast(`Saved ${s.name}.`);
      await loadSkills();
    } catch (err) { report(err); }
  });
  return form;
}


$('#add-skill').addEventListener('submit', async (e) => {
  e.preventDefault();
  const body = { name: $('#new-skill-name').value.trim(), description: $('#new-skill-description').value.trim(), instructions: $('#new-skill-instructions').value };
  try {
    const s = await post('/skills', body);
    toast(`Added ${s.name}.`);
    e.target.reset();
    $('#add-skill-box').open = false;
    await loadSkills();
  } catch (err) { report(err); }
});

$('#import-skill').addEventListener('submit', async (e) => {
  e.preventDefault();
  const source = $('#import-skill-source').value.trim();
  // A local folder is a path; anything else (https:, git@, file:) goes to git.
  const body = source.startsWith('/') ? { path: source } : { gitUrl: source };
  body.replace = $('#import-skill-replace').checked;
  const btn = e.target.querySelector('button[type=submit]');
  btn.disabled = true;
  try {
    const res = await post('/skills/import', body);
    toast(`Imported ${res.skills.map((s) => s.name).join(', ')}.`);
    e.target.reset();
    $('#import-skill-box').open = false;
    await loadSkills();
  } catch (err) { report(err); } finally { btn.disabled = false; }
});

// ---- MCP servers ---------------------------------------------------------------

async function loadMCP() {
  const res = await get('/mcp-servers');
  mcpServers = res.servers;
  renderPolicy(true);
  const list = $('#mcp-list');
  if (mcpServers.length === 0) {
    fill(list, h('p', { class: 'muted' }, 'No MCP servers yet.'));
    return;
  }
  fill(list, mcpServers.map(mcpCard));
}

function mcpCard(m) {
  const result = h('div', { class: 'test-result', role: 'status' });
  const runs = m.url || [m.command, ...m.args].join(' ');
  const secrets = [...m.envNames, ...m.headerNames];
  return h('article', { class: `entry${m.enabled ? '' : ' off'}`, 'data-mcp': m.name, 'aria-labelledby': `mcp-${m.id}` },
    h('h3', { id: `mcp-${m.id}` }, m.name, h('span', { class: `badge${m.enabled ? ' completed' : ''}` }, m.enabled ? 'on' : 'off')),
    h('p', { class: 'muted' }, h('code', null, runs), ` · tools ${m.permission === 'ask' ? 'ask each time' : m.permission} · ${m.timeoutSeconds} s a call`,
      secrets.length ? ` · secrets: ${secrets.join(', ')}` : ''),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'small', onclick: () => checkMCP(m, result) }, 'Check'),
      h('button', { type: 'button', class: 'small', onclick: () => switchMCP(m) }, m.enabled ? 'Turn off' : 'Turn on'),
      h('button', { type: 'button', class: 'small', 'aria-label': `Edit ${m.name}`, onclick: () => editMCP(m) }, 'Edit'),
      h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${m.name}`, onclick: () => remove(`Remove the MCP server ${m.name} and its stored secrets?`, `/mcp-servers/${seg(m.id)}`, m.name, loadMCP) }, 'Remove')),
    result);
}

async function checkMCP(m, out) {
  out.className = 'test-result';
  fill(out, `Starting ${m.name}…`);
  try {
    const res = await post(`/mcp-servers/${seg(m.id)}/check`);
    out.className = `test-result ${res.ok ? 'ok' : 'bad'}`;
    if (res.ok) fill(out, `Works: ${res.tools.length} tool${res.tools.length === 1 ? '' : 's'}`, h('ul', { class: 'plain tools' }, res.tools.map((t) => h('li', null, t))));
    else fill(out, `Does not work: ${res.error}`);
  } catch (err) {
    out.className = 'test-result bad';
    fill(out, `Failed: ${err.message}`);
  }
}

async function switchMCP(m) {
  try {
    await patch(`/mcp-servers/${seg(m.id)}`, { enabled: !m.enabled });
    toast(m.enabled ? `New tasks are not offered ${m.name}'s tools.` : `New tasks are offered ${m.name}'s tools.`);
    await loadMCP();
  } catch (err) { report(err); }
}


function showMCPKind() {
  const kind = $('#new-mcp-kind').value;
  for (const el of document.querySelectorAll('[data-mcp-kind]')) el.hidden = el.dataset.mcpKind !== kind;
}
$('#new-mcp-kind').addEventListener('change', showMCPKind);

/** Turns the MCP form into an editor of m, or back into the add form (null). */
function editMCP(m) {
  const form = $('#add-mcp');
  form.reset();
  form.dataset.editing = m ? m.id : '';
  $('#new-mcp-name').disabled = !!m; // a server keeps its name (its tools are named by it)
  $('#mcp-submit').textContent = m ? `Save ${m.name}` : 'Add server';
  $('#mcp-cancel-edit').hidden = !m;
  $('#mcp-edit-hint').hidden = !m;
  if (m) {
    $('#new-mcp-name').value = m.name;
    $('#new-mcp-kind').value = m.url ? 'url' : 'command';
    $('#new-mcp-command').value = m.command || '';
    $('#new-mcp-args').value = m.args.join('\n');
    $('#new-mcp-env').value = m.envNames.join('\n');
    $('#new-mcp-url').value = m.url || '';
    $('#new-mcp-headers').value = m.headerNames.join('\n');
    $('#new-mcp-permission').value = m.permission;
    $('#new-mcp-timeout').value = m.timeoutSeconds;
    $('#add-mcp-box').open = true;
  }
  showMCPKind();
}
$('#mcp-cancel-edit').addEventListener('click', () => { editMCP(null); $('#add-mcp-box').open = false; });

$('#add-mcp').addEventListener('submit', async (e) => {
  e.preventDefault();
  const editing = e.target.dataset.editing;
  const secretInputs = [$('#new-mcp-env'), $('#new-mcp-headers')];
  const body = { permission: $('#new-mcp-permission').value, timeoutSeconds: Number($('#new-mcp-timeout').value || 60) };
  if (!editing) body.name = $('#new-mcp-name').value.trim();
  try {
    // Editing, the other kind's fields are cleared: a server runs one way.
    if ($('#new-mcp-kind').value === 'url') {
      body.url = $('#new-mcp-url').value.trim();
      body.headers = pairs($('#new-mcp-headers').value, ':', 'Headers', !!editing);
      if (editing) Object.assign(body, { command: '', args: [], env: {} });
    } else {
      body.command = $('#new-mcp-command').value.trim();
      body.args = $('#new-mcp-args').value.split('\n').map((l) => l.trim()).filter((l) => l);
      body.env = pairs($('#new-mcp-env').value, '=', 'Environment', !!editing);
      if (editing) Object.assign(body, { url: '', headers: {} });
    }
  } catch (err) {
    toast(err.message, 'error');
    return;
  }
  try {
    const m = editing ? await patch(`/mcp-servers/${seg(editing)}`, body) : await post('/mcp-servers', body);
    for (const i of secretInputs) i.value = ''; // never left in the page
    toast(editing ? `Saved ${m.name}; check it to see its tools.` : `Added ${m.name}; check it to see its tools.`);
    editMCP(null);
    $('#add-mcp-box').open = false;
    await loadMCP();
  } catch (err) { report(err); }
});

// ---- Notifications ---------------------------------------------------------------

function renderNotify() {
  const on = new Set(settings.notifyEvents || []);
  for (const box of document.querySelectorAll('[data-notify]')) box.checked = on.has(box.dataset.notify);
  renderBrowserNotify();
}

$('#notify-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const notifyEvents = [...document.querySelectorAll('[data-notify]')].filter((b) => b.checked).map((b) => b.dataset.notify);
  try {
    fillSettings(await patch('/settings', { notifyEvents }), e.target);
    toast(notifyEvents.length ? 'Notifications saved.' : 'No notifications will be shown.');
  } catch (err) { report(err); }
});

function renderBrowserNotify() {
  const btn = $('#browser-notify');
  const status = $('#browser-notify-status');
  if (typeof Notification === 'undefined') {
    btn.hidden = true;
    status.textContent = 'This browser cannot show notifications.';
    return;
  }
  const perm = Notification.permission;
  btn.hidden = perm !== 'default';
  status.textContent = { granted: 'This browser shows them while a Hivecrew page is open.',
    denied: 'This browser was told not to show them: allow notifications for this site in its settings.', default: '' }[perm];
}

// The browser asks only on a click.
$('#browser-notify').addEventListener('click', async () => {
  try { await Notification.requestPermission(); } catch (err) { report(err); }
  renderBrowserNotify();
});

// ---- Webhooks ------------------------------------------------------------------

async function loadWebhooks() {
  const res = await get('/webhooks');
  const list = $('#webhook-list');
  if (res.webhooks.length === 0) {
    fill(list, h('p', { class: 'muted' }, 'No webhooks yet.'));
    return;
  }
  fill(list, res.webhooks.map(webhookCard));
}

const FORMATS = { json: 'JSON', slack: 'Slack', discord: 'Discord' };

function webhookCard(w) {
  const result = h('div', { class: 'test-result', role: 'status' });
  return h('article', { class: `entry${w.enabled ? '' : ' off'}`, 'data-webhook': w.name, 'aria-labelledby': `webhook-${w.id}` },
    h('h3', { id: `webhook-${w.id}` }, w.name, h('span', { class: 'badge' }, FORMATS[w.format] || w.format),
      h('span', { class: `badge${w.enabled ? ' completed' : ''}` }, w.enabled ? 'on' : 'off')),
    h('p', { class: 'muted' }, h('code', null, w.url), ` · ${w.events.length ? w.events.join(', ') : 'every event'}`,
      w.hasSecret ? ' · signed' : ' · not signed'),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'small', onclick: () => testWebhook(w, result) }, 'Send a test'),
      h('button', { type: 'button', class: 'small', 'aria-label': `${w.enabled ? 'Turn off' : 'Turn on'} ${w.name}`, onclick: () => switchWebhook(w) }, w.enabled ? 'Turn off' : 'Turn on'),
      h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove ${w.name}`, onclick: () => remove(`Remove the webhook ${w.name}?`, `/webhooks/${seg(w.id)}`, w.name, loadWebhooks) }, 'Remove')),
    result);
}

async function switchWebhook(w) {
  try {
    await patch(`/webhooks/${seg(w.id)}`, { enabled: !w.enabled });
    toast(w.enabled ? `${w.name} is off: it is sent nothing until you turn it on.` : `${w.name} is on: it is sent its events.`);
    await loadWebhooks();
  } catch (err) { report(err); }
}

async function testWebhook(w, out) {
  out.className = 'test-result';
  fill(out, `Sending a test to ${w.name}…`);
  try {
    const res = await post(`/webhooks/${seg(w.id)}/test`);
    out.className = `test-result ${res.ok ? 'ok' : 'bad'}`;
    fill(out, res.ok ? `Delivered: it answered ${res.status}.` : `Not delivered: ${res.error}`);
  } catch (err) {
    out.className = 'test-result bad';
    fill(out, `Failed: ${err.message}`);
  }
}

$('#add-webhook').addEventListener('submit', async (e) => {
  e.preventDefault();
  const secret = $('#new-webhook-secret');
  const boxes = [...document.querySelectorAll('[data-webhook-event]')];
  const chosen = boxes.filter((b) => b.checked).map((b) => b.dataset.webhookEvent);
  if (chosen.length === 0) {
    toast('Choose at least one event to send.', 'error');
    return;
  }
  const body = { name: $('#new-webhook-name').value.trim(), url: $('#new-webhook-url').value.trim(), format: $('#new-webhook-format').value,
    // All of them is every event, including any added later.
    events: chosen.length === boxes.length ? [] : chosen };
  if (secret.value) body.secret = secret.value;
  try {
    const w = await post('/webhooks', body);
    secret.value = ''; // never left in the page
    toast(`Added ${w.name}; send it a test to check it.`);
    e.target.reset();
    $('#add-webhook-box').open = false;
    await loadWebhooks();
  } catch (err) { report(err); }
});

// ---- Web search ------------------------------------------------------------------

let webSearch = null;

function renderWebSearch() {
  if (!settings || !webSearch) return;
  const backend = $('#ws-backend');
  if (document.activeElement !== backend) backend.value = settings.webSearchBackend || '';
  $('#ws-url').value = settings.webSearchURL || '';
  showWebSearchFields();
}

function showWebSearchFields() {
  const backend = $('#ws-backend').value;
  $('#ws-url-field').hidden = backend === '';
  $('#ws-key-field').hidden = backend !== 'brave';
  $('#ws-clear-field').hidden = backend !== 'brave' || !webSearch?.hasApiKey;
  $('#ws-key').placeholder = webSearch?.hasApiKey ? 'Leave empty to keep the stored key' : 'No key stored';
  $('#ws-status').textContent = backend === 'brave' ? (webSearch?.hasApiKey ? 'Key stored.' : 'No key stored yet.') : '';
}
$('#ws-backend').addEventListener('change', showWebSearchFields);

async function loadWebSearch() {
  webSearch = await get('/web-search');
  renderWebSearch();
}

$('#web-search-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const key = $('#ws-key');
  const backend = $('#ws-backend').value;
  try {
    if (backend === 'brave' && (key.value.trim() || $('#ws-clear').checked)) {
      webSearch = await put('/web-search', { apiKey: key.value.trim() });
    }
    key.value = '';
    $('#ws-clear').checked = false;
    const next = await patch('/settings', { webSearchBackend: backend, webSearchURL: $('#ws-url').value.trim() });
    webSearch = await get('/web-search');
    fillSettings(next, e.target);
    toast(backend ? 'Web search saved.' : 'Tasks will not search the web.');
  } catch (err) { report(err); }
});

Promise.all([loadProviders(), loadSettings(), loadTemplates(), loadAPIKeys(), loadDevices(), initCredentials(remove), loadSkills(), loadMCP(), loadWebSearch(), loadWebhooks(), initProvisioning()]).catch(report);
