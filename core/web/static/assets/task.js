// Agent window: the live screen (MJPEG frames from the stream endpoint),
// the toolbar, the activity stream (server-sent events), questions,
// permission prompts, the plan and the checklist (plan.js), instructions,
// the status bar, and takeover: while the user is in control, pointer and
// keyboard events on the live screen go to the guest in its logical
// points.
import {
  ApiError, PLAN_STATES, TERMINAL, $, badge, elapsed, every, fileList, fill, fmtBytes, fmtClock, fmtCost, fmtDuration, fmtTokens, get, h,
  initChrome, patch, post, report, seg, statusLabel, taskIdFromPath, toast, visible,
} from './common.js';
import { pointOverlay } from './marks.js';
import { attachInput } from './screeninput.js';
import { planPanel } from './plan.js';

initChrome();

const id = taskIdFromPath();
const base = `/api/v1/tasks/${seg(id)}`;
const path = `/tasks/${seg(id)}`;
const EVENT_TYPES = ['screenshot', 'tool_call_start', 'tool_call_result', 'llm_response', 'llm_request', 'status_change',
  'subagent_update', 'question', 'permission_request'];

const live = $('#live');
const stepShot = $('#step-shot');
const screen = $('#screen');
const placeholder = $('#screen-placeholder');
const activity = $('#activity');
// Where the action of the step shown aimed, marked over the screen.
const marks = pointOverlay(screen, 'screen');

let task = null;
const plan = planPanel({ path, update: (t) => { task = t; render(); }, refresh: () => poll.now() });
// Whether the helper can show the VM's own window for takeover: inside the
// Hivecrew app (its web views say so in their user agent), or with a
// backend whose VMs have windows (vz).
let nativeWindow = /\bHivecrewApp\//.test(navigator.userAgent);

// ---- Task state and rendering ----------------------------------------------

async function refreshTask() {
  try {
    task = await get(path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      fill($('#main'), h('section', { class: 'panel signin' }, h('h1', null, 'Task not found'),
        h('p', null, 'There is no task ', h('code', null, id), '. ', h('a', { href: '/' }, 'Back to the dashboard'), '.')));
      document.querySelector('footer.statusbar')?.remove(); // no task, no task status
      if (events) { events.close(); events = null; }
      poll.stop();
      return;
    }
    throw err;
  }
  render();
}

function show(el, on) { el.hidden = !on; }

function render() {
  const t = task;
  const done = TERMINAL.has(t.status);
  const running = t.status === 'running';
  const paused = t.status === 'paused';
  const taken = !!t.takenOver;
  const planWaits = PLAN_STATES.has(t.status);
  // A research subagent works on the host: no VM, no screen to show or take over.
  const host = t.subagentDomain === 'host';
  document.title = `${t.title} — Hivecrew`;
  $('#task-title').textContent = t.title;
  fill($('#task-meta'), badge(t.status), h('span', null, `${t.providerName} · ${t.modelId}`),
    t.parentTaskId ? h('span', null, host ? 'a research subagent (on the host, no VM) of ' : 'a subagent of ', h('a', { href: `/tasks/${seg(t.parentTaskId)}`, id: 'parent-link' }, 'its parent task')) : null,
    t.continuationSourceTaskId ? h('span', null, 'continues ', h('a', { href: `/tasks/${seg(t.continuationSourceTaskId)}`, id: 'source-link' }, 'an earlier task')) : null,
    t.statusReason ? h('span', { class: 'reason' }, t.statusReason) : null);
  renderSubagents(t.subagents || []);

  show($('#btn-pause'), !paused && !taken);
  $('#btn-pause').disabled = !running;
  show($('#btn-resume'), paused && !taken && !planWaits);
  show($('#btn-takeover'), !taken && !host);
  $('#btn-takeover').disabled = !(running || paused) || planWaits;
  show($('#btn-native'), nativeWindow && !taken && !host);
  show($('#btn-screenshot'), !host);
  show($('#screen-panel'), !host);
  $('#btn-native').disabled = !(running || paused) || planWaits;
  show($('#btn-handback'), taken);
  show($('#btn-cancel'), !done);
  $('#btn-screenshot').href = `${base}/screenshot`;
  show($('#control-banner'), taken);
  // Instructions go to a running agent (a paused one gets them with
  // Resume's; a plan is edited in its panel): the form is there only then.
  show($('#instruct-panel'), running && !taken);

  plan.render(t);
  renderHeld(t, paused && !taken);
  renderQuestion(t.pendingQuestion);
  renderPermission(t.pendingPermission);
  setControl(taken);
  updateScreen();
  renderStatusBar();
  if (done) {
    const res = $('#result');
    // A failed plan has its own panel: no agent ran, nothing to replay.
    res.hidden = t.status === 'planFailed';
    // A task whose changes wait for review ended as its endStatus says.
    const ended = t.status === 'writebackReview' ? t.endStatus : t.status;
    res.classList.toggle('bad', t.wasSuccessful === false || ended !== 'completed');
    $('#result-summary').textContent = t.resultSummary || statusLabel(t.status);
    fill($('#output-files'), fileList(id, t.outputFiles, 'output'));
    $('#replay-link').href = `/tasks/${seg(id)}/replay`;
    $('#btn-continue').href = `/?continue=${seg(id)}`;
    loadReview(t);
    // The activity stream stays open until it has replayed the task's
    // events: it ends after the terminal status_change (onEvent).
    poll.stop();
  }
}

// The tasks this agent started with spawn_subagent, each a link to its
// own agent window.
function renderSubagents(list) {
  $('#subagents-panel').hidden = list.length === 0;
  fill($('#subagents'), list.map((c) => h('li', { 'data-subagent': c.id },
    h('a', { href: `/tasks/${seg(c.id)}` }, c.title), ' ', badge(c.status),
    c.domain === 'host' ? h('span', { class: 'sub' }, ' research, on the host') : null)));
}

// ---- Review of the changes to host folders --------------------------------------

const OPS = { added: 'Added', modified: 'Changed', deleted: 'Deleted' };
let reviewShown = '';

async function loadReview(t) {
  const panel = $('#review');
  if (t.status !== 'writebackReview') {
    panel.hidden = true;
    return;
  }
  let rev;
  try {
    rev = await get(`${path}/writeback`);
  } catch (err) {
    report(err);
    return;
  }
  if (!rev) {
    panel.hidden = true;
    return;
  }
  // Redrawn only when something changed (a diff the user scrolls stays put).
  const key = JSON.stringify(rev);
  if (key === reviewShown) return;
  reviewShown = key;
  panel.hidden = false;
  const pending = rev.items.filter((it) => it.state === 'pending');
  $('#review-approve-all').disabled = pending.length === 0;
  $('#review-discard-all').disabled = pending.length === 0;
  $('#review-status').textContent = `${pending.length} of ${rev.items.length} waiting${rev.hasConflicts ? '; some are in conflict' : ''}`;
  fill($('#review-items'), rev.items.map(changeItem));
}

function changeItem(it) {
  const fileURL = (side) => `${base}/writeback/${seg(it.id)}/file?side=${side}`;
  const sizes = [it.sizeBefore, it.sizeAfter].filter((n) => n !== undefined && n !== null).map(fmtBytes).join(' → ');
  let why = null;
  if (it.refused) why = `Not written: ${it.refused}`;
  else if (it.hasConflict) why = `Conflict: ${it.conflictReason}`;
  // Names, lines and reasons are the guest's: shown with their control
  // and invisible characters visible (visible()).
  const li = h('li', { 'data-change': it.path, 'data-state': it.state },
    h('div', { class: 'change-head' },
      h('span', { class: 'badge' }, OPS[it.op] || it.op), h('code', null, visible(it.destinationPath)),
      sizes ? h('span', { class: 'muted' }, sizes) : null,
      it.state !== 'pending' && it.state !== 'conflict' ? h('span', { class: 'done' }, it.state) : null),
    why ? h('p', { class: 'why' }, visible(why)) : null);
  if (it.diffPreview) li.append(diffView(it.diffPreview));
  else if (it.stagedPreview !== undefined) {
    // Text without a diff (the host file changed): the agent's version.
    li.append(h('details', null, h('summary', null, "The agent's version"), h('pre', { class: 'diff' }, visible(it.stagedPreview))));
  } else if (it.kind === 'image' && !it.refused) {
    li.append(h('div', { class: 'image-pair' },
      it.op !== 'added' && !it.hasConflict ? h('figure', null, h('img', { src: fileURL('before'), alt: `${it.path} before` }), h('figcaption', null, 'Before')) : null,
      it.op !== 'deleted' ? h('figure', null, h('img', { src: fileURL('after'), alt: `${it.path} after` }), h('figcaption', null, 'After')) : null));
  } else if (it.op !== 'deleted' && !it.refused) {
    li.append(h('p', { class: 'muted' }, 'A binary file: ', h('a', { href: fileURL('after') }, 'download the new version'), '.'));
  }
  if (it.state === 'pending') {
    li.append(h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'small primary', 'aria-label': `Approve ${it.path}`, disabled: it.hasConflict, onclick: () => decide(true, [it.id]) }, 'Approve'),
      h('button', { type: 'button', class: 'small', 'aria-label': `Discard ${it.path}`, onclick: () => decide(false, [it.id]) }, 'Discard')));
  }
  return li;
}

/** A unified diff, its added and removed lines marked. */
function diffView(diff) {
  return h('pre', { class: 'diff' }, diff.split('\n').map((line) => {
    const cls = line.startsWith('@@') ? 'hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : null;
    return [cls ? h('span', { class: cls }, visible(line)) : visible(line), '\n'];
  }));
}

async function decide(approve, itemIds) {
  const buttons = [...document.querySelectorAll('#review button')];
  for (const b of buttons) b.disabled = true;
  try {
    task = await patch(path, { action: approve ? 'approve_writeback' : 'discard_writeback', itemIds });
    reviewShown = '';
    toast(approve ? 'Written to your folder.' : 'Discarded.');
    render();
  } catch (err) {
    report(err);
    reviewShown = '';
    loadReview(task);
  }
}

$('#review-approve-all').addEventListener('click', () => decide(true, undefined));
// Back in the window: the host files may have changed meanwhile (conflicts).
window.addEventListener('focus', () => { if (task) loadReview(task); });
$('#review-discard-all').addEventListener('click', () => {
  if (confirm('Discard every change the agent made to your folders?')) decide(false, undefined);
});

// ---- Rename and rerun -------------------------------------------------------

function toggleRename(open) {
  const form = $('#rename-form');
  form.hidden = !open;
  $('#task-title').hidden = open;
  $('#btn-rename').setAttribute('aria-expanded', String(open));
  if (open) {
    $('#rename-title').value = task ? task.title : '';
    $('#rename-title').select();
  }
}

$('#btn-rename').addEventListener('click', () => toggleRename($('#rename-form').hidden));
$('#rename-cancel').addEventListener('click', () => toggleRename(false));
$('#rename-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const title = $('#rename-title').value.trim();
  if (!title) return;
  try {
    task = await patch(path, { action: 'rename', title });
    toggleRename(false);
    render();
    toast('Renamed.');
  } catch (err) { report(err); }
});

/** Fills the rerun form's model list for the chosen provider. */
async function rerunModels() {
  const list = $('#rerun-models');
  fill(list);
  try {
    const res = await get(`/providers/${seg($('#rerun-provider').value)}/models`);
    fill(list, res.models.map((m) => h('option', { value: m.id }, m.name !== m.id ? m.name : null)));
  } catch {
    // The provider may not list its models: the field stays free text.
  }
}

async function toggleRerun() {
  const form = $('#rerun-form');
  if (!form.hidden) {
    form.hidden = true;
    $('#btn-rerun').setAttribute('aria-expanded', 'false');
    return;
  }
  try {
    const res = await get('/providers');
    fill($('#rerun-provider'), res.providers.map((p) => h('option', { value: p.displayName, selected: p.displayName === task.providerName }, p.displayName)));
    $('#rerun-model').value = task.modelId;
    form.hidden = false;
    $('#btn-rerun').setAttribute('aria-expanded', 'true');
    rerunModels();
    $('#rerun-model').focus();
  } catch (err) { report(err); }
}

$('#btn-rerun').addEventListener('click', toggleRerun);
$('#rerun-cancel').addEventListener('click', toggleRerun);
$('#rerun-provider').addEventListener('change', () => { $('#rerun-model').value = ''; rerunModels(); });
$('#rerun-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    const t = await patch(path, { action: 'rerun', providerName: $('#rerun-provider').value, modelId: $('#rerun-model').value.trim() });
    location.href = `/tasks/${seg(t.id)}`;
  } catch (err) { report(err); }
});

// ---- Save as skill ------------------------------------------------------------

async function openSkillDraft() {
  const form = $('#skill-draft');
  const btn = $('#save-skill');
  if (!form.hidden) {
    closeSkillDraft();
    return;
  }
  try {
    const d = await get(`${path}/skill-draft`);
    $('#skill-name').value = d.name;
    $('#skill-description').value = d.description;
    $('#skill-instructions').value = d.instructions;
    form.hidden = false;
    btn.setAttribute('aria-expanded', 'true');
    $('#skill-name').focus();
  } catch (err) { report(err); }
}

function closeSkillDraft() {
  $('#skill-draft').hidden = true;
  $('#save-skill').setAttribute('aria-expanded', 'false');
}

$('#save-skill').addEventListener('click', openSkillDraft);
$('#skill-draft-cancel').addEventListener('click', closeSkillDraft);
$('#skill-draft').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    const s = await post('/skills', { name: $('#skill-name').value.trim(), description: $('#skill-description').value.trim(), instructions: $('#skill-instructions').value });
    closeSkillDraft();
    toast(`Saved the skill @${s.name}; mention it in a task to use it.`);
  } catch (err) { report(err); }
});

// ---- Save as preset ------------------------------------------------------------

function togglePresetForm(open) {
  $('#preset-form').hidden = !open;
  $('#save-preset').setAttribute('aria-expanded', String(open));
  if (open) {
    $('#preset-name').value = $('#preset-name').value || (task ? task.title : '');
    $('#preset-name').select();
  }
}

$('#save-preset').addEventListener('click', () => togglePresetForm($('#preset-form').hidden));
$('#preset-form-cancel').addEventListener('click', () => togglePresetForm(false));
$('#preset-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    const p = await post('/presets', { name: $('#preset-name').value.trim(), fromTaskId: id });
    togglePresetForm(false);
    toast(`Saved the preset “${p.name}”; start it from the dashboard or the menu bar.`);
  } catch (err) { report(err); }
});

function renderStatusBar() {
  const t = task;
  if (!t) return;
  const on = (t.status === 'running' || t.status === 'paused') && !!t.vmId;
  const dot = $('#sb-dot');
  dot.className = `dot ${on ? 'on' : TERMINAL.has(t.status) ? 'off' : ''}`;
  let guest;
  if (on) guest = `Guest: ${t.vmId} connected${t.screen ? ` (${t.screen.width}×${t.screen.height})` : ''}`;
  else if (TERMINAL.has(t.status)) guest = 'Guest: disconnected';
  else guest = t.status === 'waitingForVM' ? 'Guest: waiting for a VM' : PLAN_STATES.has(t.status) ? 'Guest: none until the plan is approved' : 'Guest: not started';
  $('#sb-guest').textContent = guest;
  $('#sb-elapsed').textContent = t.startedAt ? fmtDuration(elapsed(t)) : '—';
  $('#sb-steps').textContent = String(t.stepCount || 0);
  $('#sb-tokens').textContent = fmtTokens(t.tokenUsage);
  $('#sb-cost').textContent = fmtCost(t.costUSD);
}

// ---- Questions, permissions (the plan: plan.js) ----------------------------------

let questionShown = '';
// Questions and permission requests answered here: the agent may still
// report them for a moment.
const answered = new Set();

function renderQuestion(q) {
  const card = $('#question-card');
  if (q && answered.has(q.id)) q = null;
  show(card, !!q);
  if (!q) { questionShown = ''; return; }
  if (q.id === questionShown) return;
  questionShown = q.id;
  $('#question-text').textContent = q.question;
  const choices = $('#question-choices');
  const options = q.suggestedAnswers || [];
  fill(choices, options.map((o) => h('button', { type: 'button', class: 'choice', onclick: () => answer(q.id, o) }, o)));
  show(choices, options.length > 0);
  show($('#question-form'), options.length === 0);
  $('#question-answer').value = '';
  if (document.activeElement === document.body) card.querySelector('button, textarea')?.focus();
}

async function answer(questionId, text) {
  if (!text.trim()) return;
  try {
    await post(`${path}/question/answer`, { questionId, answer: text });
    answered.add(questionId);
    $('#question-card').hidden = true;
    toast('Answer sent.');
  } catch (err) { report(err); }
  poll.now();
}

let permissionShown = '';

function renderPermission(p) {
  if (p && answered.has(p.id)) p = null;
  show($('#permission-card'), !!p);
  if (!p) { permissionShown = ''; return; }
  if (p.id === permissionShown) return;
  permissionShown = p.id;
  $('#permission-tool').textContent = p.toolName;
  $('#permission-details').textContent = prettyJSON(p.details);
}

// A task held at its step or time limit, or at its budget, offers to go on
// with more (PATCH resume with extraSteps/extraMinutes, or a new budget).
let heldShown = '';

function renderHeld(t, paused) {
  const reason = paused ? t.statusReason || '' : '';
  const atLimit = /^reached its (limit of|time limit)/.test(reason);
  const atBudget = /^(token|cost) budget reached/.test(reason);
  show($('#limit-card'), atLimit);
  show($('#budget-card'), atBudget);
  if (reason === heldShown) return;
  heldShown = reason;
  if (atLimit) {
    $('#limit-reason').textContent = `It ${reason}.`;
    const time = reason.startsWith('reached its time limit');
    $('#limit-steps').value = time ? '' : String(t.maxIterations || '');
    $('#limit-minutes').value = time ? String(t.timeoutMinutes || '') : '';
  }
  if (atBudget) {
    $('#budget-reason').textContent = `Its ${reason}.`;
    // Suggest twice what it may use now; the field of the other budget
    // stays empty (unchanged).
    const used = (t.tokenUsage && t.tokenUsage.total) || 0;
    const tokens = reason.startsWith('token');
    $('#budget-tokens').value = tokens ? String(Math.max((t.budgetTokens || 0) * 2, used * 2, 1000)) : '';
    $('#budget-usd').value = tokens ? '' : String(Math.ceil(Math.max((t.budgetUSD || 0) * 2, (t.costUSD || 0) * 2, 0.01) * 100) / 100);
  }
}

function numberOf(el) {
  const v = el.value.trim();
  return v === '' ? undefined : Number(v);
}

$('#limit-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const body = { action: 'resume', extraSteps: numberOf($('#limit-steps')), extraMinutes: numberOf($('#limit-minutes')) };
  act(() => patch(path, body));
});

$('#budget-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const body = { action: 'resume', budgetTokens: numberOf($('#budget-tokens')), budgetUSD: numberOf($('#budget-usd')) };
  act(() => patch(path, body));
});

function prettyJSON(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch { return s; }
}

async function respond(approved) {
  const p = task && task.pendingPermission;
  if (!p) return;
  try {
    await post(`${path}/permission/respond`, { permissionId: p.id, approved });
    answered.add(p.id);
    $('#permission-card').hidden = true;
    toast(approved ? 'Approved.' : 'Denied.');
  } catch (err) { report(err); }
  poll.now();
}

// ---- Toolbar -----------------------------------------------------------------

async function act(fn) {
  try {
    task = await fn();
    render();
  } catch (err) { report(err); }
}

$('#btn-pause').addEventListener('click', () => act(() => patch(path, { action: 'pause' })));
$('#btn-resume').addEventListener('click', () => act(() => patch(path, { action: 'resume' })));
$('#btn-takeover').addEventListener('click', () => act(() => post(`${path}/takeover`, { action: 'start' })));
$('#btn-native').addEventListener('click', () => act(() => post(`${path}/takeover`, { action: 'start', native: true })));
const handBack = () => act(() => post(`${path}/takeover`, { action: 'end' }));
$('#btn-handback').addEventListener('click', handBack);
$('#banner-handback').addEventListener('click', handBack);
$('#btn-cancel').addEventListener('click', () => {
  if (confirm('Cancel this task? The agent stops and its VM is destroyed.')) act(() => patch(path, { action: 'cancel' }).then(() => get(path)));
});
$('#permission-approve').addEventListener('click', () => respond(true));
$('#permission-deny').addEventListener('click', () => respond(false));
$('#question-form').addEventListener('submit', (e) => {
  e.preventDefault();
  if (questionShown) answer(questionShown, $('#question-answer').value);
});
$('#instruct-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const box = $('#instruction');
  const text = box.value.trim();
  if (!text) return;
  try {
    await post(`${path}/instructions`, { text });
    box.value = '';
    toast('Sent to the agent.');
  } catch (err) { report(err); }
});

// ---- Screen ------------------------------------------------------------------

let mode = 'none'; // stream | shots | still | none
let streamTries = 0;
let shotTimer = null;
let streamN = 0;

function isLive() { return task && (task.status === 'running' || task.status === 'paused') && !!task.vmId; }

function updateScreen() {
  if (task && task.subagentDomain === 'host') return; // no VM, no screen
  if (isLive()) {
    if (mode !== 'stream' && mode !== 'shots') startStream();
  } else if (task && TERMINAL.has(task.status)) {
    if (mode !== 'still') showStill();
  } else {
    const waitText = {
      waitingForVM: 'Waiting for a VM…',
      planning: 'Planning…: the agent starts once you approve its plan.',
      planReview: 'The plan waits for your review: the agent starts once you approve it.',
    };
    placeholder.textContent = (task && waitText[task.status]) || 'Queued: the agent starts when a VM is free.';
  }
  $('#screen-hint').textContent = task && task.takenOver
    ? 'Click, drag, scroll and type on the screen; they go to the VM. Ctrl+Shift+Esc still stops all agents.'
    : '';
}

function startStream() {
  mode = 'stream';
  clearInterval(shotTimer);
  live.src = `${base}/stream?fps=4&maxWidth=1280&n=${++streamN}`;
}

function showStill() {
  mode = 'still';
  clearInterval(shotTimer);
  live.src = `${base}/screenshot?t=${Date.now()}`;
}

function startShots() {
  mode = 'shots';
  clearInterval(shotTimer);
  const tick = () => { if (isLive()) live.src = `${base}/screenshot?t=${Date.now()}`; };
  tick();
  shotTimer = setInterval(tick, 1000);
}

live.addEventListener('load', () => {
  streamTries = 0;
  if (stepShot.hidden) live.hidden = false;
  placeholder.hidden = true;
});
live.addEventListener('error', () => {
  if (mode === 'stream' && isLive()) {
    // The stream broke (or the VM just appeared): retry, then fall back to
    // polling screenshots.
    mode = 'none';
    if (++streamTries <= 3) setTimeout(() => { if (isLive() && mode === 'none') startStream(); }, 800);
    else startShots();
    return;
  }
  if (mode === 'still') {
    live.hidden = true;
    placeholder.hidden = false;
    placeholder.textContent = 'No screenshot was taken.';
  }
});

/** Shows the screenshot of a step, with the marks of where its actions aimed. */
function showStep(url, label, li, aimed = []) {
  if (task && task.takenOver) return;
  for (const s of activity.querySelectorAll('li.selected')) s.classList.remove('selected');
  if (li) li.classList.add('selected');
  stepShot.src = url;
  stepShot.alt = `Screenshot of ${label}`;
  stepShot.hidden = false;
  live.hidden = true;
  placeholder.hidden = true;
  $('#viewing').hidden = false;
  $('#viewing-label').textContent = `Viewing the screen at ${label}`;
  marks.show(aimed);
}

function backToLive() {
  for (const s of activity.querySelectorAll('li.selected')) s.classList.remove('selected');
  stepShot.hidden = true;
  stepShot.removeAttribute('src');
  $('#viewing').hidden = true;
  live.hidden = mode === 'none' || !live.complete || live.naturalWidth === 0;
  placeholder.hidden = !live.hidden;
  marks.show(lastAim ? [lastAim] : []);
}
$('#back-to-live').addEventListener('click', backToLive);

// ---- Takeover: input to the guest --------------------------------------------

let controlling = false;

function setControl(on) {
  if (on === controlling) return;
  controlling = on;
  screen.classList.toggle('control', on);
  if (on) {
    backToLive();
    screen.tabIndex = 0;
    screen.setAttribute('role', 'application');
    screen.setAttribute('aria-label', "The VM's screen: your clicks and keys go to the VM");
    screen.focus();
  } else {
    screen.removeAttribute('tabindex');
    screen.removeAttribute('role');
    screen.removeAttribute('aria-label');
  }
}

attachInput({ screen, live, path, active: () => controlling, size: () => task && task.screen });

// ---- Activity stream -----------------------------------------------------------

const seen = new Set();
let pinned = true;
let unseen = 0;
let lastShot = null; // {url, label} of the latest screenshot event
// Where the latest action on that screenshot aimed ({point, summary}),
// marked on the live screen until the next screenshot.
let lastAim = null;
let events = null;

function atBottom() { return activity.scrollHeight - activity.scrollTop - activity.clientHeight < 30; }

activity.addEventListener('scroll', () => {
  pinned = atBottom();
  if (pinned) {
    unseen = 0;
    $('#jump-latest').hidden = true;
  }
});
$('#jump-latest').addEventListener('click', () => {
  activity.scrollTop = activity.scrollHeight;
  pinned = true;
  unseen = 0;
  $('#jump-latest').hidden = true;
});

const KIND_LABELS = {
  tool_call: 'tool', tool_result: 'result', llm_response: 'model', llm_request: 'you', observation: 'screen',
  error: 'error', info: 'status', user_question: 'asks', user_answer: 'answer', subagent: 'subagent',
};

function addEvent(ev) {
  if (seen.has(ev.seq)) return;
  seen.add(ev.seq);
  const d = ev.data || {};
  const label = `step event ${ev.seq} (${fmtClock(ev.timestamp)})`;
  if (d.screenshot) {
    lastShot = { url: d.screenshot, label };
    lastAim = null;
  }
  const aim = d.point ? { point: d.point, summary: d.summary || ev.type } : null;
  if (aim) lastAim = aim;
  if (stepShot.hidden) marks.show(lastAim ? [lastAim] : []);
  const shot = lastShot;
  const li = h('li', { class: d.activityType || ev.type, 'data-seq': ev.seq, 'data-type': ev.type });
  const line = [
    h('time', { datetime: ev.timestamp }, fmtClock(ev.timestamp)),
    h('span', { class: 'kind' }, KIND_LABELS[d.activityType] || ev.type),
    h('span', { class: 'summary' }, d.summary || ev.type),
    aim && shot ? h('span', { class: 'aim', title: 'Marked on the screenshot' }, '◎ marked') : null,
  ];
  if (shot) {
    li.append(h('button', {
      type: 'button', class: 'line step-link', 'data-shot': shot.url,
      title: aim ? 'Show the screen at this step, with where it aimed' : 'Show the screen at this step',
      onclick: () => showStep(shot.url, shot.label, li, aim ? [aim] : []),
    }, line));
  } else {
    li.append(h('div', { class: 'line' }, line));
  }
  const more = [d.reasoning && d.reasoning !== d.summary ? d.reasoning : '', d.details || ''].filter(Boolean).join('\n\n');
  if (more) li.append(h('details', null, h('summary', null, 'Details'), h('pre', null, more)));
  activity.append(li);
  $('#activity-count').textContent = `${seen.size} events`;
  if (pinned) {
    activity.scrollTop = activity.scrollHeight;
  } else {
    unseen++;
    const jump = $('#jump-latest');
    jump.hidden = false;
    jump.textContent = `${unseen} new: jump to latest`;
  }
}

let refreshSoon = null;

function onEvent(msg) {
  let ev;
  try { ev = JSON.parse(msg.data); } catch { return; }
  addEvent(ev);
  if (ev.type === 'llm_response' || (ev.type === 'status_change' && TERMINAL.has(ev.data.status))) endLive();
  if (ev.type === 'status_change' && TERMINAL.has(ev.data.status)) {
    if (events) { events.close(); events = null; }
    poll.now();
    return;
  }
  if (['status_change', 'question', 'permission_request', 'tool_call_result', 'llm_response'].includes(ev.type)) {
    // The pending question or permission is set just after its event.
    clearTimeout(refreshSoon);
    poll.now();
    refreshSoon = setTimeout(() => poll.now(), 300);
  }
}

// The model's answer as it streams (llm_stream events of ?live=1): shown
// under the activity until its llm_response event arrives.
function onLive(msg) {
  let ev;
  try { ev = JSON.parse(msg.data); } catch { return; }
  const d = ev.data || {};
  if (plan.onLive(d)) return; // the plan as it is written
  const box = $('#live-answer');
  const text = $('#live-text');
  const reasoning = $('#live-reasoning');
  if (d.reset) {
    text.textContent = '';
    reasoning.textContent = '';
  }
  text.textContent += d.text || '';
  reasoning.textContent += d.reasoning || '';
  $('#live-reasoning-box').hidden = !reasoning.textContent;
  $('#live-answer-step').textContent = `Step ${d.step}: answering…`;
  box.hidden = !text.textContent && !reasoning.textContent;
  box.scrollTop = box.scrollHeight;
}

function endLive() {
  $('#live-answer').hidden = true;
  $('#live-text').textContent = '';
  $('#live-reasoning').textContent = '';
}

function openEvents() {
  events = new EventSource(`${base}/events?live=1`);
  events.addEventListener('llm_stream', onLive);
  for (const t of EVENT_TYPES) events.addEventListener(t, onEvent);
  events.addEventListener('message', onEvent);
  events.addEventListener('error', (e) => {
    if (e.data) toast(`Activity stream: ${JSON.parse(e.data)}`, 'error');
    if (task && TERMINAL.has(task.status) && events) { events.close(); events = null; }
  });
}

// ---- Start ---------------------------------------------------------------------

const poll = every(1500, refreshTask);
setInterval(renderStatusBar, 1000);
get('/system/status').then((st) => {
  if (st.backend === 'vz') {
    nativeWindow = true;
    if (task) render();
  }
}).catch(() => {});
openEvents();
document.addEventListener('hivecrew:stopped', () => poll.now());
document.addEventListener('hivecrew:signedout', () => { if (events) events.close(); });
