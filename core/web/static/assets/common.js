// Shared by every page: the API client, the page chrome (kill switch and
// its shortcut, toasts, the sign-in notice), and DOM and format helpers.
// Text from the API only ever becomes text nodes, never HTML.

/** An error answer of the API ({error: {message, code}}) or no answer. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Terminal task statuses. */
export const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'timedOut', 'maxIterations', 'planFailed', 'writebackReview']);
/** Statuses of tasks that hold (or wait for) an agent, or whose plan is being written or reviewed. */
export const ACTIVE = ['queued', 'planning', 'planReview', 'waitingForVM', 'running', 'paused'];
/** Statuses of a plan-first task before its plan is approved (no VM yet). */
export const PLAN_STATES = new Set(['planning', 'planReview']);

const STATUS_LABELS = {
  queued: 'Queued', planning: 'Planning…', planReview: 'Plan review', waitingForVM: 'Waiting for VM',
  running: 'Running', paused: 'Paused', completed: 'Completed', failed: 'Failed', cancelled: 'Cancelled',
  timedOut: 'Timed out', maxIterations: 'Step limit reached', planFailed: 'Plan failed',
  writebackReview: 'Changes to review',
};

export function statusLabel(s) { return STATUS_LABELS[s] || s; }

const TOKEN_KEY = 'hivecrew.session';

// The login link's redirect brings the session token in the address's
// fragment (never sent to a server): keep it in this origin's storage and
// take it out of the address bar and history.
(function takeSessionToken() {
  const m = /^#session=([0-9a-f]{64})$/.exec(location.hash);
  if (!m) return;
  try { localStorage.setItem(TOKEN_KEY, m[1]); } catch { /* storage off: this page only */ }
  window.hivecrewSessionToken = m[1];
  history.replaceState(null, '', location.pathname + location.search);
})();

function sessionToken() {
  try { return localStorage.getItem(TOKEN_KEY) || window.hivecrewSessionToken || ''; } catch { return window.hivecrewSessionToken || ''; }
}

/**
 * Calls the API: path is below /api/v1. body is JSON, FormData for a
 * multipart upload, or a Blob (a File) sent as it is. Answers the parsed JSON (null for 204); throws ApiError.
 * A 401 shows how to sign in.
 */
export async function api(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin' };
  // A session cookie alone cannot change anything: state-changing calls
  // carry the session's token, which only this origin's pages can read.
  const token = sessionToken();
  if (token && method !== 'GET') init.headers['X-Hivecrew-Session'] = token;
  if (body instanceof FormData) {
    init.body = body;
  } else if (body instanceof Blob) {
    init.headers['Content-Type'] = body.type || 'application/octet-stream';
    init.body = body;
  } else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch('/api/v1' + path, init);
  } catch (err) {
    throw new ApiError(0, 'network', `The helper does not answer (${err.message}). Is it running?`);
  }
  if (resp.status === 401) {
    showSignIn();
    throw new ApiError(401, 'unauthorized', 'This page has no session.');
  }
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) {
    const e = data && data.error;
    throw new ApiError(resp.status, (e && e.code) || 'http', (e && e.message) || `${resp.status} ${resp.statusText}`);
  }
  return data;
}

export const get = (p) => api('GET', p);
export const post = (p, b) => api('POST', p, b);
export const patch = (p, b) => api('PATCH', p, b);
export const put = (p, b) => api('PUT', p, b);
export const del = (p) => api('DELETE', p);

/** Encodes a path segment. */
export const seg = (s) => encodeURIComponent(s);

/**
 * Builds an element: props set attributes (class, for, aria-*, data-*),
 * properties (value, checked, selected, disabled) and listeners (onclick);
 * children are nodes or strings (as text).
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'open') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Control characters (but line breaks and tabs) and invisible formatting
// characters: bidirectional overrides, zero-width characters, line and
// paragraph separators. The same set as the helper's printable filter
// (core/redact).
const HIDDEN = /(?![\n\t])[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/**
 * Text a guest wrote, as nodes: each control or invisible formatting
 * character is shown as its escape (\x1b, \u202e) in a marked span, never
 * acted on, so that an override cannot reorder what the user reads before
 * approving it.
 */
export function visible(s) {
  const out = [];
  let at = 0;
  for (const m of String(s).matchAll(HIDDEN)) {
    if (m.index > at) out.push(s.slice(at, m.index));
    const c = m[0].codePointAt(0);
    const esc = c < 0x20 ? `\\x${c.toString(16).padStart(2, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`;
    out.push(h('span', { class: 'hidden-char', title: `U+${c.toString(16).toUpperCase().padStart(4, '0')}, an invisible or control character` }, esc));
    at = m.index + m[0].length;
  }
  if (at < s.length) out.push(s.slice(at));
  return out;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);

/** A status badge. */
export function badge(status) {
  return h('span', { class: `badge ${status}`, 'data-status': status }, statusLabel(status));
}

/** Seconds as "42s", "3m 05s", "1h 02m". */
export function fmtDuration(sec) {
  if (sec === null || sec === undefined || !isFinite(sec)) return '—';
  sec = Math.max(0, Math.floor(sec));
  const hh = Math.floor(sec / 3600), mm = Math.floor((sec % 3600) / 60), ss = sec % 60;
  if (hh) return `${hh}h ${String(mm).padStart(2, '0')}m`;
  if (mm) return `${mm}m ${String(ss).padStart(2, '0')}s`;
  return `${ss}s`;
}

/** A task's running time so far, or in all, in seconds. */
export function elapsed(task) {
  if (!task || !task.startedAt) return null;
  const end = task.completedAt ? Date.parse(task.completedAt) : Date.now();
  return (end - Date.parse(task.startedAt)) / 1000;
}

const timeFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const clockFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

export function fmtTime(iso) { return iso ? timeFmt.format(new Date(iso)) : '—'; }
export function fmtClock(iso) { return iso ? clockFmt.format(new Date(iso)) : ''; }

export function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function fmtCost(usd) {
  if (usd === null || usd === undefined) return '—';
  if (usd === 0) return '$0.00';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

export function fmtTokens(u) {
  if (!u) return '0';
  return new Intl.NumberFormat().format(u.total);
}

/** Shows a short message in the page's live region. */
export function toast(message, kind = 'info') {
  const region = document.getElementById('toasts');
  if (!region) return;
  // The same message again renews the one shown (with a count) instead of
  // piling up; at most three are shown, the oldest going first.
  for (const old of region.children) {
    if (old.dataset.message === message && old.dataset.kind === kind) {
      const n = Number(old.dataset.count || 1) + 1;
      old.dataset.count = String(n);
      old.textContent = `${message} (×${n})`;
      clearTimeout(old.timer);
      old.timer = setTimeout(() => old.remove(), kind === 'error' ? 8000 : 4000);
      return;
    }
  }
  while (region.children.length >= 3) region.firstElementChild.remove();
  const t = h('div', { class: `toast ${kind}` }, message);
  t.dataset.message = message;
  t.dataset.kind = kind;
  region.append(t);
  t.timer = setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

// The API's field names and statuses in its errors, as people say them.
const API_WORDS = [
  ['providerName ', 'provider '], ['templateId ', 'template '], ['modelId ', 'model '],
  ['outputDirectory ', 'output folder '], ['maxIterations ', 'step limit '], ['timeoutMinutes ', 'time limit '],
  ['networkMode ', 'network mode '], ['reasoningEffort ', 'reasoning effort '],
  ['schedule.scheduledAt ', 'the run time '], ['schedule.timeZone ', 'time zone '],
  [' timedOut', ' timed out'], [' maxIterations', ' out of steps'], [' waitingForVM', ' waiting for a VM'],
];

/** An error message of the API in the words of the UI. */
export function humanize(message) {
  let out = String(message);
  for (const [api, words] of API_WORDS) out = out.split(api).join(words);
  return out;
}

/** Reports an error of an action to the user. */
export function report(err) {
  if (err instanceof ApiError && err.status === 401) return;
  toast(humanize(err.message || String(err)), 'error');
}

let signedOut = false;

/** Whether a request found the page without a session. */
export function isSignedOut() { return signedOut; }

/** Replaces the page with how to get a session. */
export function showSignIn() {
  if (signedOut) return;
  signedOut = true;
  document.body.classList.add('signed-out');
  const main = document.getElementById('main');
  const kill = document.getElementById('kill-switch');
  if (kill) kill.disabled = true;
  document.dispatchEvent(new CustomEvent('hivecrew:signedout'));
  fill(main, h('section', { class: 'panel signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in to Hivecrew'),
    h('p', null, 'This page has no session with the Hivecrew helper. Sessions come from one-time links that only you can ask for, on this computer.'),
    h('p', null, 'Open a terminal and run:'),
    h('pre', null, h('code', null, 'hivecrew open')),
    h('p', null, 'It opens this page signed in. To print the link instead (for another browser), run ',
      h('code', null, 'hivecrew open --print'), '. ', h('code', null, 'make run'), ' prints one when it starts the helper.'),
    h('p', { class: 'muted' }, 'A link works once and for five minutes; the session it starts lasts a week.')));
  document.title = 'Sign in — Hivecrew';
}

let stopping = false;

/** The kill switch: stops every running and paused agent. */
export async function stopAll() {
  if (stopping) return;
  stopping = true;
  const btn = document.getElementById('kill-switch');
  if (btn) btn.disabled = true;
  try {
    const res = await post('/system/stop-all');
    const n = res.stopped.length;
    toast(n === 0 ? 'No agent was running.' : `Stopped ${n} agent${n === 1 ? '' : 's'}.`);
    document.dispatchEvent(new CustomEvent('hivecrew:stopped', { detail: res }));
  } catch (err) {
    report(err);
  } finally {
    stopping = false;
    if (btn && !signedOut) btn.disabled = false;
  }
}

/** Whether a key event is the kill switch shortcut (Ctrl+Shift+Escape, or ⌘⇧⎋). */
export function isKillShortcut(e) {
  return e.key === 'Escape' && e.shiftKey && (e.ctrlKey || e.metaKey);
}

/** Wires the chrome every page has: the kill switch button and shortcut. */
export function initChrome() {
  const btn = document.getElementById('kill-switch');
  if (btn) btn.addEventListener('click', stopAll);
  // Capture phase: the shortcut wins over any other key handling, even the
  // takeover view's forwarding of keys to the guest.
  window.addEventListener('keydown', (e) => {
    if (isKillShortcut(e)) {
      e.preventDefault();
      e.stopPropagation();
      stopAll();
    }
  }, true);
}

/** Runs fn now and every ms while the page is visible and signed in. */
export function every(ms, fn) {
  let timer = null;
  let busy = false;
  let again = false;
  let stopped = false;
  const tick = async () => {
    clearTimeout(timer);
    if (signedOut || stopped) return;
    if (busy) {
      again = true; // the running call schedules the next one
      return;
    }
    if (!document.hidden) {
      busy = true;
      try { await fn(); } catch (err) { if (!(err instanceof ApiError && err.status === 401)) console.warn(err); }
      busy = false;
    }
    if (again) {
      again = false;
      tick();
      return;
    }
    clearTimeout(timer);
    if (!signedOut && !stopped) timer = setTimeout(tick, ms);
  };
  tick();
  return {
    now: () => { if (!stopped) tick(); },
    stop: () => { stopped = true; clearTimeout(timer); },
  };
}

/** A task's id from a path like /tasks/{id} or /tasks/{id}/replay. */
export function taskIdFromPath() {
  const m = location.pathname.match(/^\/tasks\/([^/]+)/);
  return m ? decodeURIComponent(m[1]) : '';
}

/** Links to a task's output (or input) file. */
export function fileURL(taskId, name, type = 'output') {
  return `/api/v1/tasks/${seg(taskId)}/files/${name.split('/').map(seg).join('/')}?type=${type}`;
}

/** A list of a task's files with download links. */
export function fileList(taskId, files, type) {
  if (!files || files.length === 0) return h('p', { class: 'empty' }, type === 'output' ? 'No output files.' : 'No input files.');
  return h('ul', { class: 'files' }, files.map((f) => h('li', null,
    h('a', { href: fileURL(taskId, f.name, type), download: f.name, class: 'file-link' }, f.name),
    h('span', { class: 'muted' }, fmtBytes(f.size)),
    f.savedTo ? h('span', { class: 'muted hint' }, `saved to ${f.savedTo}`) : null,
    type === 'output' && f.savedTo ? h('span', { class: 'file-actions' },
      h('button', { type: 'button', class: 'small', 'aria-label': `Open ${f.name}`, onclick: () => openOutput(taskId, f.name, false) }, 'Open'),
      h('button', { type: 'button', class: 'small', 'aria-label': `Show ${f.name} in its folder`, onclick: () => openOutput(taskId, f.name, true) }, 'Show in folder')) : null)));
}

/**
 * Has the helper open a task's saved output on this computer, or show the
 * folder it is in; says so, or why not (a file that would run is shown,
 * never opened).
 */
async function openOutput(taskId, name, folder) {
  try {
    await post(`/tasks/${seg(taskId)}/outputs/${seg(name)}/open`, { folder });
    toast(folder ? `Showing the folder of ${name}.` : `Opening ${name}.`);
  } catch (err) { report(err); }
}

/**
 * Lines of "NAME=value" (sep "=") or "Name: value" (sep ":") as an object;
 * throws on a bad line. With keep, a name alone is NAME: null (an edit's
 * "keep the stored value").
 */
export function pairs(text, sep, what, keep = false) {
  const out = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter((l) => l)) {
    const i = line.indexOf(sep);
    if (keep && i < 0) {
      out[line] = null; // a name alone: its stored value stays
      continue;
    }
    if (i <= 0) throw new Error(`${what}: "${line.split(sep)[0]}" has no value (write NAME${sep === '=' ? '=' : ': '}value)`);
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}
