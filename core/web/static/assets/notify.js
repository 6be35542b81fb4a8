// Browser notifications (the Notifications API) while a page of the web UI
// is open: a task that completed or failed, a plan or changes to review, a
// question or a permission request — only the events chosen in Settings
// (notifyEvents), and only once this browser has been allowed to show them
// (asked on a click in Settings). As the menu bar's notices.
import { TERMINAL, get, seg } from './common.js';

/** Whether this browser can show notifications and has been allowed to. */
export function browserNotifies() {
  return typeof Notification !== 'undefined' && Notification.permission === 'granted';
}

/**
 * What changed between two views of the active tasks (id → task), and of
 * the tasks that left them (their final state): [{event, taskId, title, body}].
 */
export function noticesOf(before, after, ended) {
  const out = [];
  for (const t of ended) {
    if (t.status === 'completed') out.push({ event: 'completed', taskId: t.id, title: 'Task completed', body: summaryOf(t) });
    else if (FAILED[t.status]) out.push({ event: 'failed', taskId: t.id, title: `Task ${FAILED[t.status]}`, body: summaryOf(t) });
    else if (t.status === 'writebackReview') {
      out.push({ event: 'review', taskId: t.id, title: `${t.title}: changes to review`, body: 'Its changes to your folders wait for your review before they are written.' });
    }
  }
  for (const [id, t] of after) {
    const prev = before.get(id) || {};
    if (t.status === 'planReview' && prev.status !== 'planReview') {
      out.push({ event: 'plan', taskId: id, title: `${t.title}: plan ready`, body: 'Open the task to approve, edit or cancel its plan.' });
    }
    const q = t.pendingQuestion;
    if (q && prev.pendingQuestion?.id !== q.id) out.push({ event: 'question', taskId: id, title: `${t.title} asks`, body: q.question });
    const p = t.pendingPermission;
    if (p && prev.pendingPermission?.id !== p.id) out.push({ event: 'permission', taskId: id, title: `${t.title} needs your approval`, body: `Allow ${p.toolName}?` });
  }
  return out;
}

/** The ends that notify as failures, as people say them. */
const FAILED = { failed: 'failed', timedOut: 'timed out', maxIterations: 'stopped at its step limit', planFailed: 'failed to plan' };

function summaryOf(t) {
  return t.resultSummary ? `${t.title}: ${t.resultSummary}` : t.title;
}

/**
 * A watcher of the tasks: give it each new list of the active ones (the
 * dashboard's poll); it shows what changed since the last, of the events
 * the user wants. The ended tasks are read apart (the newest ends), so a
 * task that started and ended between two polls is told too; the first
 * look only sets where it starts.
 */
export function taskNotifier() {
  let before = null;
  // told holds the ended tasks already told of (or ended before the watch
  // began): each end is told once.
  let told = null;
  return async function seen(tasks) {
    const after = new Map(tasks.map((t) => [t.id, t]));
    const prev = before;
    before = after;
    if (!browserNotifies()) return;
    const recent = (await get(`/tasks?status=${[...TERMINAL].join(',')}&limit=50&sort=completedAt&order=desc`)).tasks;
    if (!prev || !told) {
      told = new Set(recent.map((t) => t.id));
      return;
    }
    const ended = recent.filter((t) => !told.has(t.id));
    // More ends than the newest 50 in one poll: the active ones that left
    // are read one by one.
    for (const id of prev.keys()) {
      if (after.has(id) || told.has(id) || ended.some((t) => t.id === id)) continue;
      try { ended.push(await get(`/tasks/${seg(id)}`)); } catch { /* deleted meanwhile */ }
    }
    const done = ended.filter((t) => TERMINAL.has(t.status));
    if (told.size > 2000) told = new Set(recent.map((t) => t.id));
    for (const t of done) told.add(t.id);
    const all = noticesOf(prev, after, done);
    if (all.length === 0) return;
    const wanted = new Set((await get('/settings')).notifyEvents || []);
    for (const n of all) {
      if (!wanted.has(n.event)) continue;
      const note = new Notification(n.title, { body: n.body, tag: `${n.taskId}:${n.event}` });
      note.onclick = () => { window.focus(); location.href = `/tasks/${seg(n.taskId)}`; };
    }
  };
}
