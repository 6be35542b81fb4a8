// Dashboard: the new-task form, active tasks as live cards, the history.
import {
  ACTIVE, TERMINAL, $, badge, del, elapsed, every, fileList, fill, fmtCost, fmtDuration, fmtTime, get, h, initChrome,
  pairs, patch, post, report, seg, statusLabel, toast,
} from './common.js';
import { modelPicker, reasoningOf } from './modelpicker.js';
import { pairingItems, pairingNotifier } from './devices.js';
import { taskNotifier } from './notify.js';

initChrome();

/** Tools whose permission a task may override here (Settings has them all). */
const TASK_TOOLS = ['run_shell', 'open_terminal', 'write_file', 'move_file', 'open_url', 'open_app'];

// continueFrom is the finished task the new one continues (?continue=ID).
const state = { providers: [], settings: null, files: [], skills: [], continueFrom: null };
const picker = modelPicker({
  select: $('#task-model'), text: $('#task-model-text'), label: $('#task-model-label'), hint: $('#model-hint'),
  reasoning: $('#task-reasoning'), reasoningHint: $('#reasoning-hint'),
});

// ---- New task form -------------------------------------------------------

async function loadForm() {
  const [prov, settings, templates] = await Promise.all([get('/providers'), get('/settings'), get('/templates')]);
  state.providers = prov.providers;
  state.settings = settings;
  if (state.providers.length === 0) {
    const params = new URLSearchParams(location.search);
    if (!params.has('stay')) {
      location.replace('/welcome');
      return;
    }
    $('#onboarding-notice').hidden = false;
  }
  const sel = $('#task-provider');
  fill(sel, state.providers.map((p) => h('option', { value: p.displayName, selected: p.isDefault },
    p.isDefault ? `${p.displayName} (default)` : p.displayName)));
  if (state.providers.length === 0) fill(sel, h('option', { value: '' }, 'No provider yet'));
  sel.addEventListener('change', () => picker.load(chosenProvider()));
  picker.load(chosenProvider());

  $('#task-output').placeholder = settings.outputDirectory;
  $('#task-timeout').placeholder = String(settings.defaultTimeoutMinutes);
  $('#task-max-iterations').placeholder = String(settings.defaultMaxIterations);
  fill($('#task-template'), h('option', { value: '' }, 'Default'),
    templates.templates.map((t) => h('option', { value: t.id }, t.isDefault ? `${t.name} (default)` : t.name)));
  const net = $('#task-network option[value=""]');
  net.textContent = `Default (${settings.networkMode})`;
  fill($('#tool-policy'), TASK_TOOLS.map((tool) => {
    const policy = settings.toolPolicy || {};
    // open_terminal follows run_shell unless a policy names it.
    // use_credential asks unless a policy names it (the helper's default too).
    const def = policy[tool] || (tool === 'open_terminal' ? `as run_shell: ${policy.run_shell || 'allow'}` : tool === 'use_credential' ? 'ask' : 'allow');
    return h('div', { class: 'field' },
      h('label', { for: `policy-${tool}` }, tool),
      h('select', { id: `policy-${tool}`, 'data-tool': tool },
        h('option', { value: '' }, `Default (${def})`),
        ['allow', 'ask', 'deny'].map((p) => h('option', { value: p }, p))));
  }));
  const describe = new URLSearchParams(location.search).get('describe');
  if (describe) $('#task-description').value = describe;
  loadSkills();
  const from = new URLSearchParams(location.search).get('continue');
  if (from) continueFrom(from);
}

// ---- Continue a finished task ----------------------------------------------

/** Prepares the form to continue a finished task: its model, and a notice. */
async function continueFrom(id) {
  try {
    const t = await get(`/tasks/${seg(id)}`);
    state.continueFrom = t.id;
    const n = (t.outputFiles || []).length;
    $('#continue-text').textContent = `Continuing “${t.title}”: ${n === 0 ? 'it left no output files; ' : `its ${n} output file${n === 1 ? '' : 's'} will be in the inbox, and `}the agent gets a summary of it. Say what to do next.`;
    $('#continue-notice').hidden = false;
    if ([...$('#task-provider').options].some((o) => o.value === t.providerName)) {
      $('#task-provider').value = t.providerName;
      picker.load(chosenProvider(), { model: t.modelId, reasoning: reasoningOf(t) });
    }
    $('#task-description').focus();
  } catch (err) { report(err); }
}

$('#continue-clear').addEventListener('click', () => {
  state.continueFrom = null;
  $('#continue-notice').hidden = true;
  history.replaceState(null, '', '/');
});

// ---- @-mentions of skills ------------------------------------------------------

// A skill the description names as @name gets its instructions into the
// agent's first message (the helper reads the mentions the same way).
const MENTION = /(?:^|[\s(])@([a-z0-9][a-z0-9-]{0,63})\b/g;
const suggest = { items: [], active: 0, start: -1 };

async function loadSkills() {
  try {
    state.skills = (await get('/skills')).skills.filter((s) => s.isEnabled);
  } catch {
    state.skills = []; // no completion; typing @name still works
  }
  mentionHint();
}

/** The @word being typed at the caret: its start and the letters so far. */
function typedMention(ta) {
  const before = ta.value.slice(0, ta.selectionStart);
  const m = /(?:^|[\s(])@([a-z0-9-]*)$/.exec(before);
  return m && ta.selectionStart === ta.selectionEnd ? { start: before.length - m[1].length - 1, prefix: m[1] } : null;
}

function updateSuggestions() {
  const ta = $('#task-description');
  const typed = typedMention(ta);
  suggest.items = typed ? state.skills.filter((s) => s.name.startsWith(typed.prefix)).slice(0, 8) : [];
  suggest.start = typed ? typed.start : -1;
  suggest.active = Math.min(suggest.active, Math.max(0, suggest.items.length - 1));
  renderSuggestions();
}

function renderSuggestions() {
  const ta = $('#task-description');
  const list = $('#skill-suggestions');
  const open = suggest.items.length > 0;
  list.hidden = !open;
  ta.setAttribute('aria-expanded', String(open));
  if (!open) {
    ta.removeAttribute('aria-activedescendant');
    fill(list);
    return;
  }
  fill(list, suggest.items.map((s, i) => {
    const li = h('li', { id: `skill-opt-${i}`, role: 'option', 'aria-selected': String(i === suggest.active), 'data-skill': s.name },
      h('code', null, `@${s.name}`), ' ', h('span', { class: 'muted' }, s.description));
    // mousedown, not click: the textarea keeps its focus and caret.
    li.addEventListener('mousedown', (e) => { e.preventDefault(); chooseSkill(i); });
    return li;
  }));
  ta.setAttribute('aria-activedescendant', `skill-opt-${suggest.active}`);
  list.children[suggest.active]?.scrollIntoView({ block: 'nearest' });
}

function chooseSkill(i) {
  const ta = $('#task-description');
  const s = suggest.items[i];
  if (!s || suggest.start < 0) return;
  const end = ta.selectionStart;
  const insert = `@${s.name} `;
  ta.value = ta.value.slice(0, suggest.start) + insert + ta.value.slice(end).replace(/^ /, '');
  const caret = suggest.start + insert.length;
  ta.setSelectionRange(caret, caret);
  suggest.items = [];
  renderSuggestions();
  mentionHint();
}

/** Says which skills the description mentions. */
function mentionHint() {
  const names = [...new Set([...$('#task-description').value.matchAll(MENTION)].map((m) => m[1]))]
    .filter((n) => state.skills.some((s) => s.name === n));
  const hint = $('#skill-hint');
  hint.hidden = names.length === 0;
  hint.textContent = names.length ? `The agent starts with the instructions of ${names.map((n) => `@${n}`).join(', ')}.` : '';
}

{
  const ta = $('#task-description');
  ta.addEventListener('input', () => { updateSuggestions(); mentionHint(); });
  ta.addEventListener('click', updateSuggestions);
  ta.addEventListener('blur', () => { suggest.items = []; renderSuggestions(); });
  ta.addEventListener('keydown', (e) => {
    if (suggest.items.length === 0) return;
    const n = suggest.items.length;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      suggest.active = (suggest.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      renderSuggestions();
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      chooseSkill(suggest.active);
    } else if (e.key === 'Escape') {
      suggest.items = [];
      renderSuggestions();
    } else {
      return;
    }
    e.preventDefault();
  });
}

/** The provider the form has chosen, or undefined. */
function chosenProvider() {
  return state.providers.find((p) => p.displayName === $('#task-provider').value);
}

function renderFiles() {
  const list = $('#file-list');
  fill(list, state.files.map((f, i) => h('li', null,
    h('span', null, `${f.name} (${f.size} bytes)`),
    h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${f.name}`, onclick: () => { state.files.splice(i, 1); renderFiles(); } }, 'Remove'))));
}

function addFiles(fileList) {
  for (const f of fileList) {
    if (!state.files.some((x) => x.name === f.name && x.size === f.size)) state.files.push(f);
  }
  renderFiles();
}

function wireFiles() {
  const input = $('#task-files');
  input.addEventListener('change', () => { addFiles(input.files); input.value = ''; });
  const zone = $('#drop-zone');
  // A file dropped anywhere else must not navigate away from the page.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => e.preventDefault());
  zone.addEventListener('dragenter', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    zone.classList.remove('over');
    if (e.dataTransfer && e.dataTransfer.files.length) addFiles(e.dataTransfer.files);
  });
}

// ---- Compare models ------------------------------------------------------

let targetSeq = 0;

/** Adds a row choosing one more provider and model to run the task on. */
function addTarget() {
  const n = ++targetSeq;
  const provider = h('select', { id: `target-provider-${n}`, 'data-role': 'provider' },
    state.providers.map((p) => h('option', { value: p.id, selected: p.isDefault }, p.displayName)));
  const list = h('datalist', { id: `target-models-${n}` });
  const model = h('input', { type: 'text', id: `target-model-${n}`, 'data-role': 'model', list: `target-models-${n}`, autocomplete: 'off', spellcheck: 'false', placeholder: 'Model id' });
  const models = async () => {
    fill(list);
    try {
      const res = await get(`/providers/${seg(provider.value)}/models`);
      fill(list, res.models.map((m) => h('option', { value: m.id }, m.name !== m.id ? m.name : null)));
    } catch {
      // Free text then.
    }
  };
  provider.addEventListener('change', models);
  const row = h('li', { class: 'row' },
    h('div', { class: 'field' }, h('label', { for: provider.id }, 'Provider'), provider),
    h('div', { class: 'field' }, h('label', { for: model.id }, 'Model'), model, list),
    h('button', { type: 'button', class: 'small', 'aria-label': 'Remove this model', onclick: () => { row.remove(); } }, 'Remove'));
  $('#compare-targets').append(row);
  models();
  model.focus();
}

/** The batch targets of the form: the main provider and model first. */
function batchTargets(copies) {
  const main = chosenProvider();
  // The reasoning choice is the chosen model's: the models compared
  // reason as they do by default.
  const targets = [{ providerId: main ? main.id : $('#task-provider').value, modelId: picker.model(), copyCount: copies, ...picker.reasoning() }];
  for (const row of document.querySelectorAll('#compare-targets li')) {
    targets.push({ providerId: row.querySelector('[data-role=provider]').value, modelId: row.querySelector('[data-role=model]').value.trim(), copyCount: copies });
  }
  return targets;
}

/**
 * The task the form describes, as POST /tasks takes it in JSON (without
 * its files), or null with the problem said and the field focused.
 */
function formTask() {
  const desc = $('#task-description').value.trim();
  if (!desc) {
    $('#form-status').textContent = 'Describe the task first.';
    $('#task-description').focus();
    return null;
  }
  const task = { description: desc };
  const text = { providerName: '#task-provider', outputDirectory: '#task-output', templateId: '#task-template', networkMode: '#task-network' };
  for (const [name, sel] of Object.entries(text)) {
    const v = $(sel).value.trim();
    if (v) task[name] = v;
  }
  if (picker.model()) task.modelId = picker.model();
  Object.assign(task, picker.reasoning());
  for (const [name, sel] of Object.entries({ timeoutMinutes: '#task-timeout', maxIterations: '#task-max-iterations' })) {
    const v = $(sel).value.trim();
    if (v) task[name] = Number(v);
  }
  if ($('#task-plan-first').checked) task.planFirst = true;
  const folders = $('#task-folders').value.split('\n').map((l) => l.trim()).filter((l) => l);
  if (folders.length) task.hostFolders = folders;
  // The task's own provisioning (checked again by the helper, which says
  // what is wrong: a reserved name, a command too long).
  let environment;
  try {
    environment = pairs($('#task-env').value, '=', 'Environment variables');
  } catch (err) {
    $('#form-status').textContent = err.message;
    $('#advanced').open = true;
    $('#task-env').focus();
    return null;
  }
  const setupCommands = $('#task-setup').value.split('\n').map((l) => l.trim()).filter((l) => l).map((command) => ({ command }));
  if (Object.keys(environment).length || setupCommands.length) {
    task.provisioning = {};
    if (Object.keys(environment).length) task.provisioning.environment = environment;
    if (setupCommands.length) task.provisioning.setupCommands = setupCommands;
  }
  const policy = {};
  for (const s of document.querySelectorAll('#tool-policy select')) {
    if (s.value) policy[s.dataset.tool] = s.value;
  }
  if (Object.keys(policy).length) task.toolPolicy = policy;
  return task;
}

async function submitTask(e) {
  e.preventDefault();
  const status = $('#form-status');
  const task = formTask();
  if (!task) return;
  const fd = new FormData();
  for (const [name, v] of Object.entries(task)) {
    if (Array.isArray(v)) v.forEach((x) => fd.append(name, x));
    else fd.append(name, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  if (state.continueFrom) fd.append('continuationSourceTaskId', state.continueFrom);
  for (const f of state.files) fd.append('files', f, f.name);
  const copies = Number($('#task-copies').value || 1);
  const batch = copies > 1 || document.querySelectorAll('#compare-targets li').length > 0;
  if (batch) {
    if (!Number.isInteger(copies) || copies < 1 || copies > 8) {
      status.textContent = 'Runs per model: 1 to 8.';
      $('#task-copies').focus();
      return;
    }
    const targets = batchTargets(copies);
    const missing = targets.findIndex((t) => !t.modelId);
    if (missing >= 0) {
      status.textContent = 'Choose a model for each provider you compare.';
      if (missing === 0) picker.focus();
      else document.querySelectorAll('#compare-targets [data-role=model]')[missing - 1].focus();
      return;
    }
    for (const name of ['providerName', 'modelId', 'reasoningEffort', 'reasoningEnabled']) fd.delete(name);
    fd.append('targets', JSON.stringify(targets));
  }
  const btn = $('#start-task');
  btn.disabled = true;
  status.textContent = state.files.length ? 'Uploading…' : 'Starting…';
  try {
    if (batch) {
      const res = await post('/tasks/batch', fd);
      location.href = `/batches/${seg(res.tasks[0].batchId)}`;
      return;
    }
    const task = await post('/tasks', fd);
    location.href = `/tasks/${seg(task.id)}`;
  } catch (err) {
    status.textContent = '';
    report(err);
    btn.disabled = false;
  }
}

// ---- Presets -----------------------------------------------------------------

function showPresetSave(open) {
  $('#preset-save').hidden = !open;
  if (open) $('#preset-name').focus();
}

/** Saves the form (and its files) as a preset. */
async function savePreset() {
  const task = formTask();
  if (!task) return;
  const name = $('#preset-name').value.trim();
  if (!name) {
    $('#form-status').textContent = 'Name the preset first.';
    $('#preset-name').focus();
    return;
  }
  const fd = new FormData();
  fd.append('preset', JSON.stringify({ name, task }));
  for (const f of state.files) fd.append('files', f, f.name);
  const btn = $('#preset-save-confirm');
  btn.disabled = true;
  try {
    const p = await post('/presets', fd);
    toast(`Saved preset “${p.name}”.`);
    $('#preset-name').value = '';
    $('#form-status').textContent = '';
    showPresetSave(false);
    refreshPresets();
  } catch (err) {
    report(err);
  }
  btn.disabled = false;
}

async function refreshPresets() {
  const { presets } = await get('/presets');
  fill($('#presets'), presets.map((p) => {
    const files = p.inputFiles.length ? ` · ${p.inputFiles.length} file${p.inputFiles.length === 1 ? '' : 's'}` : '';
    const start = h('button', { type: 'button', class: 'small primary', 'aria-label': `Start ${p.name}` }, 'Start');
    start.addEventListener('click', async () => {
      start.disabled = true;
      try {
        const t = await post(`/presets/${seg(p.id)}/run`, {});
        location.href = `/tasks/${seg(t.id)}`;
      } catch (err) { report(err); start.disabled = false; }
    });
    const remove = h('button', { type: 'button', class: 'small', 'aria-label': `Delete ${p.name}` }, 'Delete');
    remove.addEventListener('click', async () => {
      if (!confirm(`Delete the preset “${p.name}”? Tasks it started stay.`)) return;
      try { await del(`/presets/${seg(p.id)}`); refreshPresets(); } catch (err) { report(err); }
    });
    return h('li', { 'data-preset': p.name },
      h('span', { class: 'name' }, p.name),
      h('span', { class: 'what', title: p.task.description }, `${p.task.description.slice(0, 90)}${p.task.description.length > 90 ? '…' : ''}${files}`),
      start, remove);
  }));
  $('#no-presets').hidden = presets.length > 0;
}

// ---- Waiting for you, today's usage --------------------------------------------

/** What a task waits for, and the link's words; null if nothing. */
function waitingFor(t) {
  if (t.pendingQuestion) return ['asks: ' + t.pendingQuestion.question, 'Answer'];
  if (t.pendingPermission) return [`wants to use ${t.pendingPermission.toolName}`, 'Approve or deny'];
  if (t.status === 'planReview') return ['has a plan for you to review', 'Review plan'];
  if (t.status === 'writebackReview') return ['changed your folders: review before they are written', 'Review changes'];
  return null;
}

const pairingsSeen = pairingNotifier();

async function refreshAttention(active) {
  const [review, { pairings }] = await Promise.all([get('/tasks?status=writebackReview&limit=50&sort=createdAt&order=asc'), get('/auth/pairings')]);
  pairingsSeen(pairings);
  const waiting = [...active, ...review.tasks].map((t) => [t, waitingFor(t)]).filter(([, w]) => w);
  fill($('#attention-list'), pairingItems(pairings, () => activePoll.now()), waiting.map(([t, [what, action]]) => h('li', { 'data-task-id': t.id },
    h('a', { href: `/tasks/${seg(t.id)}` }, t.title),
    h('span', { class: 'what' }, what),
    h('a', { class: 'button small primary', href: `/tasks/${seg(t.id)}` }, action))));
  const any = waiting.length + pairings.length > 0;
  $('#attention-empty').hidden = any;
  $('#attention').classList.toggle('has-items', any);
}

async function refreshUsage() {
  const midnight = new Date();
  midnight.setHours(0, 0, 0, 0);
  const u = await get(`/usage?since=${encodeURIComponent(midnight.toISOString())}`);
  const n = new Intl.NumberFormat();
  $('#usage-today').textContent = `Today: ${n.format(u.total.totalTokens)} tokens · ${fmtCost(u.total.costUSD)} · ${u.total.tasks} task${u.total.tasks === 1 ? '' : 's'}`;
  $('#usage-details').hidden = u.models.length === 0;
  fill($('#usage-rows'), u.models.map((m) => h('tr', null,
    h('th', { scope: 'row' }, `${m.providerName} · ${m.modelId}`),
    h('td', null, n.format(m.tasks)), h('td', null, n.format(m.promptTokens)),
    h('td', null, n.format(m.completionTokens)), h('td', null, fmtCost(m.costUSD)))));
}

// ---- Active tasks ----------------------------------------------------------

const cards = new Map(); // task id -> {el, task, parts}

// The screen now (a fresh capture while the task runs, else its last one).
function thumbURL(id) { return `/api/v1/tasks/${seg(id)}/screenshot?live=1&maxWidth=480&t=${Date.now()}`; }

function makeCard(t) {
  const img = h('img', { class: 'thumb', alt: `Screen of “${t.title}”`, hidden: true });
  const ph = h('div', { class: 'thumb placeholder' }, 'No screen yet');
  img.addEventListener('load', () => { img.hidden = false; ph.hidden = true; });
  img.addEventListener('error', () => { img.hidden = true; ph.hidden = false; });
  const parts = {
    badge: h('span'), elapsed: h('span', { class: 'elapsed' }), vm: h('span', { class: 'vm' }),
    pause: h('button', { type: 'button', class: 'small', 'data-action': 'pause' }, 'Pause'),
    cancel: h('button', { type: 'button', class: 'small danger', 'data-action': 'cancel' }, 'Cancel'),
    img, ph, reason: h('p', { class: 'hint' }),
    open: h('a', { class: 'button small', href: `/tasks/${seg(t.id)}` }, 'Open'),
  };
  const el = h('article', { class: 'card task-card', 'data-task-id': t.id, 'aria-labelledby': `card-${t.id}` },
    h('a', { href: `/tasks/${seg(t.id)}`, tabindex: '-1', 'aria-hidden': 'true' }, img, ph),
    h('h3', { id: `card-${t.id}` }, h('a', { href: `/tasks/${seg(t.id)}` }, t.title)),
    h('div', { class: 'meta' }, parts.badge, parts.elapsed, parts.vm),
    t.description.trim() !== t.title.trim() ? h('p', { class: 'snippet' }, t.description) : null,
    parts.reason,
    h('div', { class: 'actions' }, parts.pause, parts.cancel, parts.open));
  parts.pause.addEventListener('click', async () => {
    const task = cards.get(t.id).task;
    const action = task.status === 'paused' ? 'resume' : 'pause';
    parts.pause.disabled = true;
    try { updateCard(await patch(`/tasks/${seg(t.id)}`, { action })); } catch (err) { report(err); }
    parts.pause.disabled = false;
  });
  parts.cancel.addEventListener('click', async () => {
    if (!confirm(`Cancel “${t.title}”? Its VM is destroyed.`)) return;
    parts.cancel.disabled = true;
    try { await patch(`/tasks/${seg(t.id)}`, { action: 'cancel' }); toast('Task cancelled.'); activePoll.now(); historyPoll.now(); } catch (err) { report(err); }
  });
  return { el, task: t, parts, shotAt: 0 };
}

function updateCard(t) {
  const c = cards.get(t.id);
  if (!c) return;
  c.task = t;
  fill(c.parts.badge, badge(t.status));
  c.parts.elapsed.textContent = t.startedAt ? fmtDuration(elapsed(t)) : 'not started';
  c.parts.vm.textContent = t.vmId ? t.vmId : '';
  c.parts.reason.textContent = t.statusReason || (t.pendingQuestion ? 'Waiting for your answer' : t.pendingPermission ? 'Waiting for your approval' : '');
  c.parts.pause.textContent = t.status === 'paused' ? 'Resume' : 'Pause';
  // A plan under review is approved in the agent window.
  c.parts.open.textContent = t.status === 'planReview' ? 'Review plan' : 'Open';
  c.parts.open.classList.toggle('primary', t.status === 'planReview');
  c.parts.ph.textContent = { planning: 'Planning…', planReview: 'Plan waits for your review' }[t.status] || 'No screen yet';
  c.parts.pause.disabled = !(t.status === 'running' || t.status === 'paused');
  const live = t.status === 'running' || t.status === 'paused';
  if (live && Date.now() - c.shotAt > 2500) {
    c.shotAt = Date.now();
    c.parts.img.src = thumbURL(t.id);
  }
}

const notifier = taskNotifier();

async function refreshActive() {
  const res = await get(`/tasks?status=${ACTIVE.join(',')}&limit=50&sort=createdAt&order=asc`);
  // Before the cards of ended tasks go: a notification is a courtesy,
  // never the page's error.
  await notifier(res.tasks).catch(() => {});
  const seen = new Set();
  const box = $('#active-tasks');
  for (const t of res.tasks) {
    seen.add(t.id);
    if (!cards.has(t.id)) {
      const c = makeCard(t);
      cards.set(t.id, c);
      box.append(c.el);
    }
    updateCard(t);
  }
  for (const [id, c] of cards) {
    if (!seen.has(id)) {
      c.el.remove();
      cards.delete(id);
      historyPoll.now();
    }
  }
  $('#no-active').hidden = cards.size > 0;
  await refreshAttention(res.tasks);
  const st = await get('/system/status');
  $('#system-summary').textContent = `${st.agents.running} running · ${st.agents.paused} paused · ${st.agents.queued} queued · ` +
    `VMs: ${st.vms.active} busy, ${st.vms.available} ready`;
}

// ---- History ---------------------------------------------------------------

let historySig = '';
let historyTasks = [];

async function refreshHistory() {
  const status = $('#history-status').value || [...TERMINAL].join(',');
  const res = await get(`/tasks?status=${status}&limit=200&sort=createdAt&order=desc`);
  historyTasks = res.tasks;
  renderHistory();
}

function renderHistory() {
  const q = $('#history-search').value.trim().toLowerCase();
  const shown = historyTasks.filter((t) => !q || t.title.toLowerCase().includes(q) || t.description.toLowerCase().includes(q));
  const sig = JSON.stringify([q, shown.map((t) => [t.id, t.status, t.title, t.completedAt])]);
  if (sig === historySig) return;
  historySig = sig;
  const list = $('#history');
  const open = new Set([...list.querySelectorAll('details[open]')].map((d) => d.dataset.taskId));
  fill(list, shown.map((t) => historyRow(t, open.has(t.id))));
  $('#history-empty').hidden = shown.length > 0;
  $('#history-empty').textContent = historyTasks.length ? 'No task matches.' : 'No finished tasks.';
}

function historyRow(t, open) {
  const body = h('div', { class: 'body' }, h('p', { class: 'muted' }, 'Loading…'));
  const det = h('details', { 'data-task-id': t.id, open },
    h('summary', null,
      h('span', { class: 'title' }, t.title),
      badge(t.status),
      h('span', { class: 'dur', title: 'Duration' }, fmtDuration(t.duration)),
      h('time', { class: 'when', datetime: t.createdAt }, fmtTime(t.createdAt))),
    body);
  const load = async () => {
    try {
      const full = await get(`/tasks/${seg(t.id)}`);
      fill(body,
        h('p', null, full.resultSummary || statusLabel(full.status)),
        h('p', { class: 'muted' }, `${full.providerName} · ${full.modelId} · ${full.stepCount || 0} steps`),
        h('h3', null, 'Output files'),
        fileList(t.id, full.outputFiles, 'output'),
        h('div', { class: 'actions' },
          h('a', { class: 'button small', href: `/tasks/${seg(t.id)}` }, 'Open'),
          h('a', { class: 'button small', href: `/tasks/${seg(t.id)}/replay` }, 'Replay'),
          h('button', { type: 'button', class: 'small', onclick: () => rerun(t.id) }, 'Run again'),
          TERMINAL.has(full.status) ? h('a', { class: 'button small', href: `/?continue=${seg(t.id)}` }, 'Continue') : null,
          h('button', { type: 'button', class: 'small', onclick: () => remove(t) }, 'Delete')));
    } catch (err) {
      fill(body, h('p', { class: 'muted' }, err.message));
    }
  };
  det.addEventListener('toggle', () => { if (det.open) load(); });
  if (open) load();
  return h('li', null, det);
}

async function rerun(id) {
  try {
    const t = await patch(`/tasks/${seg(id)}`, { action: 'rerun' });
    location.href = `/tasks/${seg(t.id)}`;
  } catch (err) { report(err); }
}

async function remove(t) {
  if (!confirm(`Delete “${t.title}” and its session?`)) return;
  try { await del(`/tasks/${seg(t.id)}`); historySig = ''; historyPoll.now(); } catch (err) { report(err); }
}

// ---- Start -----------------------------------------------------------------

$('#new-task').addEventListener('submit', submitTask);
$('#save-preset').addEventListener('click', () => showPresetSave($('#preset-save').hidden));
$('#preset-save-confirm').addEventListener('click', savePreset);
$('#preset-save-cancel').addEventListener('click', () => showPresetSave(false));
$('#preset-name').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); savePreset(); } });
$('#add-target').addEventListener('click', addTarget);
wireFiles();
$('#history-search').addEventListener('input', renderHistory);
$('#history-status').addEventListener('change', () => { historySig = ''; historyPoll.now(); });
loadForm().catch(report);
const activePoll = every(2000, refreshActive);
const historyPoll = every(5000, refreshHistory);
every(10000, refreshUsage);
refreshPresets().catch(report);
document.addEventListener('hivecrew:stopped', () => { activePoll.now(); historyPoll.now(); });
