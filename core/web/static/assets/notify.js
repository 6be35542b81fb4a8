// Browser notifications (the Notifications API) while a page of the web UI
// is open: a task that completed or failed, a plan or changes to review, a
// question or a permission request — only the events chosen in Settings
// (notifyEvents), and only once this browser has been allowed to show them
// (asked on a click in Settings). As the menu bar's notices.
import { get, seg } from './common.js';

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
 * A watcher of the active tasks: give it each new list (the dashboard's
 * poll); it shows what changed since the last, of the events the user
 * wants. The first list only sets where it starts.
 */
export function taskNotifier() {
  let before = null;
  return async function seen(tasks) {
    const after = new Map(tasks.map((t) => [t.id, t]));
    const prev = before;
    before = after;
    if (!prev || !browserNotifies()) return;
    const ended = [];
    for (const id of prev.keys()) {
      if (after.has(id)) continue;
      try { ended.push(await get(`/tasks/${seg(id)}`)); } catch { /* deleted meanwhile */ }
    }
    const all = noticesOf(prev, after, ended);
    if (all.length === 0) return;
    const wanted = new Set((await get('/settings')).notifyEvents || []);
    for (const n of all) {
      if (!wanted.has(n.event)) continue;
      const note = new Notification(n.title, { body: n.body, tag: `${n.taskId}:${n.event}` });
      note.onclick = () => { window.focus(); location.href = `/tasks/${seg(n.taskId)}`; };
    }
  };
}
