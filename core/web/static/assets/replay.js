// Session replay: a timeline scrubber over the session's screenshots, the
// step list (each step shows the screen it saw, marked where its action
// aimed), the conversation transcript, and export links.
import {
  $, ApiError, badge, fill, fmtClock, fmtDuration, fmtTime, fmtTokens, get, h, initChrome, report, seg,
  taskIdFromPath,
} from './common.js';
import { pointOverlay } from './marks.js';

initChrome();

const id = taskIdFromPath();
const path = `/tasks/${seg(id)}`;
let events = [];
let shots = []; // indexes into events of screenshot events
let current = -1;
const marks = pointOverlay($('#replay-shot').parentElement, 'replay');

async function load() {
  let task;
  try {
    task = await get(path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      fill($('#main'), h('section', { class: 'panel signin' }, h('h1', null, 'Task not found'),
        h('p', null, h('a', { href: '/' }, 'Back to the dashboard'))));
      return;
    }
    throw err;
  }
  document.title = `Replay: ${task.title} — Hivecrew`;
  $('#replay-title').textContent = `Replay: ${task.title}`;
  $('#task-link').href = path;
  fill($('#replay-meta'), badge(task.status), h('span', null, fmtTime(task.startedAt || task.createdAt)),
    h('span', null, `${task.stepCount || 0} steps`), h('span', null, fmtDuration(task.duration)),
    h('span', null, `${fmtTokens(task.tokenUsage)} tokens`));
  $('#replay-summary').textContent = task.resultSummary || '';
  for (const f of ['html', 'markdown', 'json']) $(`#export-${f}`).href = `/api/v1${path}/export?format=${f}`;

  const act = await get(`${path}/activity?limit=10000`);
  events = act.events;
  shots = [];
  events.forEach((e, i) => { if (e.data && e.data.screenshot) shots.push(i); });
  renderSteps();
  const scrub = $('#scrubber');
  scrub.max = String(Math.max(0, shots.length - 1));
  scrub.disabled = shots.length === 0;
  $('#prev-step').disabled = shots.length === 0;
  $('#next-step').disabled = shots.length === 0;
  if (shots.length) select(0);
  else $('#step-pos').textContent = 'No screenshots.';
  loadTranscript();
}

function renderSteps() {
  fill($('#steps'), events.map((e, i) => h('li', null,
    h('button', { type: 'button', 'data-index': i, onclick: () => selectEvent(i) },
      h('time', { class: 'muted', datetime: e.timestamp }, fmtClock(e.timestamp)),
      h('span', null, (e.data && e.data.summary) || e.type),
      e.data && e.data.point ? h('span', { class: 'aim', title: 'Marked on the screenshot' }, '◎ marked') : null))));
}

/** The marks of events from index from up to (not including) to: where their actions aimed. */
function aimed(from, to) {
  return events.slice(from, to).filter((e) => e.data && e.data.point)
    .map((e) => ({ point: e.data.point, summary: e.data.summary || e.type }));
}

/** Shows the screenshot a given event saw: the latest at or before it. */
function selectEvent(i) {
  let s = -1;
  for (let k = 0; k < shots.length; k++) if (shots[k] <= i) s = k;
  if (s < 0 && shots.length) s = 0;
  if (s >= 0) select(s, i);
}

function select(s, eventIndex) {
  current = s;
  const e = events[shots[s]];
  const img = $('#replay-shot');
  img.src = e.data.screenshot;
  img.alt = `Screen at ${fmtClock(e.timestamp)}: ${e.data.summary}`;
  img.hidden = false;
  $('#replay-placeholder').hidden = true;
  $('#scrubber').value = String(s);
  $('#scrubber').setAttribute('aria-valuetext', `Screenshot ${s + 1} of ${shots.length}, ${fmtClock(e.timestamp)}`);
  $('#step-pos').textContent = `Screenshot ${s + 1} of ${shots.length}`;
  const mark = eventIndex === undefined ? shots[s] : eventIndex;
  // An event's own aim; for a screenshot, the aims of the actions taken on it.
  marks.show(eventIndex !== undefined && events[eventIndex].data && events[eventIndex].data.point
    ? aimed(eventIndex, eventIndex + 1)
    : aimed(shots[s], s + 1 < shots.length ? shots[s + 1] : events.length));
  for (const b of document.querySelectorAll('#steps button')) {
    if (Number(b.dataset.index) === mark) {
      b.setAttribute('aria-current', 'step');
      b.scrollIntoView({ block: 'nearest' });
    } else {
      b.removeAttribute('aria-current');
    }
  }
}

$('#scrubber').addEventListener('input', (e) => select(Number(e.target.value)));
$('#prev-step').addEventListener('click', () => { if (current > 0) select(current - 1); });
$('#next-step').addEventListener('click', () => { if (current < shots.length - 1) select(current + 1); });

/** The text of an OpenAI-style message's content. */
function messageText(m) {
  const c = m.content !== undefined ? m.content : m.multi_content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => (p.type === 'text' ? p.text : '[image]')).join('\n');
  return '';
}

async function loadTranscript() {
  const list = $('#transcript');
  let doc;
  try {
    const resp = await fetch(`/api/v1${path}/export?format=json`, { credentials: 'same-origin' });
    if (!resp.ok) throw new Error(`export: ${resp.status}`);
    doc = await resp.json();
  } catch {
    fill(list, h('li', { class: 'muted' }, 'No conversation recorded.'));
    return;
  }
  const conv = Array.isArray(doc.conversation) ? doc.conversation : [];
  if (conv.length === 0) {
    fill(list, h('li', { class: 'muted' }, 'No conversation recorded.'));
    return;
  }
  fill(list, conv.map((rec) => {
    // A session's records (v 1): a message of the provider-neutral
    // conversation, or a condensation of the history; older traces hold
    // chat messages.
    if (rec && rec.v) {
      if (rec.condensed) {
        return h('li', null, h('div', { class: 'role' }, 'history condensed'), h('pre', null, blocksText(rec.condensed.summary.content)));
      }
      const m = rec.message || {};
      return h('li', null, h('div', { class: 'role' }, m.role), h('pre', null, blocksText(m.content)));
    }
    const m = rec;
    const calls = (m.tool_calls || []).map((c) => `→ ${c.function.name}(${c.function.arguments})`);
    const text = [messageText(m), ...calls].filter(Boolean).join('\n');
    const role = h('div', { class: 'role' }, m.role === 'tool' ? 'tool result' : m.role);
    if (m.role === 'system') return h('li', null, role, h('details', null, h('summary', null, 'The agent\'s instructions'), h('pre', null, text)));
    return h('li', null, role, h('pre', null, text));
  }));
}

// blocksText is a neutral message's blocks as the transcript shows them.
function blocksText(blocks) {
  return (blocks || []).map((b) => {
    switch (b.type) {
      case 'text': return b.text;
      case 'image': return '[screenshot]';
      case 'tool_call': return `→ ${b.call.name}(${JSON.stringify(b.call.args)})`;
      case 'tool_result': return `[result] ${blocksText(b.result.content)}`;
      case 'reasoning': return b.reasoning.text ? `(thinking) ${b.reasoning.text}` : '(thinking)';
      default: return '';
    }
  }).filter(Boolean).join('\n');
}

load().catch(report);
