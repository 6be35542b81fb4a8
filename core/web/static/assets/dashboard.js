// Dashboard: the new-task form, active tasks as live cards, the history.
import {
  ACTIVE, TERMINAL, $, badge, del, elapsed, every, fileList, fill, fmtCost, fmtDuration, fmtTime, get, h, initChrome,
  patch, post, report, seg, statusLabel, toast,
} from './common.js';
import { reasoningOf } from './modelpicker.js';
import { pairingItems, pairingNotifier } from './devices.js';
import { taskNotifier } from './notify.js';
import { taskForm } from './taskform.js';

initChrome();

// continueFrom is the finished task the new one continues (?continue=ID).
const state = { continueFrom: null };
const form = taskForm({ status: $('#form-status') });
const { picker, chosenProvider } = form;

// ---- New task form -------------------------------------------------------

async function loadForm() {
  const { providers } = await form.load();
  if (providers.length === 0) {
    const params = new URLSearchParams(location.search);
    if (!params.has('stay')) {
      location.replace('/welcome');
      return;
    }
    $('#onboarding-notice').hidden = false;
  }
  const describe = new URLSearchParams(location.search).get('describe');
  if (describe) $('#task-description').value = describe;
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

// ---- Compare models ------------------------------------------------------

let targetSeq = 0;

/** Adds a row choosing one more provider and model to run the task on. */
function addTarget() {
  const n = ++targetSeq;
  const provider = h('select', { id: `target-provider-${n}`, 'data-role': 'provider' },
    form.providers().map((p) => h('option', { value: p.id, selected: p.isDefault }, p.displayName)));
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

async function submitTask(e) {
  e.preventDefault();
  const status = $('#form-status');
  const task = form.formTask();
  if (!task) return;
  const fd = new FormData();
  for (const [name, v] of Object.entries(task)) {
    if (Array.isArray(v)) v.forEach((x) => fd.append(name, x));
    else fd.append(name, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  if (state.continueFrom) fd.append('continuationSourceTaskId', state.continueFrom);
  for (const f of form.files()) fd.append('files', f, f.name);
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
  status.textContent = form.files().length ? 'Uploading…' : 'Starting…';
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
  const task = form.formTask();
  if (!task) return;
  const name = $('#preset-name').value.trim();
  if (!name) {
    $('#form-status').textContent = 'Name the preset first.';
    $('#preset-name').focus();
    return;
  }
  const fd = new FormData();
  fd.append('preset', JSON.stringify({ name, task }));
  for (const f of form.files()) fd.append('files', f, f.name);
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
$('#history-search').addEventListener('input', renderHistory);
$('#history-status').addEventListener('change', () => { historySig = ''; historyPoll.now(); });
loadForm().catch(report);
const activePoll = every(2000, refreshActive);
const historyPoll = every(5000, refreshHistory);
every(10000, refreshUsage);
refreshPresets().catch(report);
document.addEventListener('hivecrew:stopped', () => { activePoll.now(); historyPoll.now(); });
