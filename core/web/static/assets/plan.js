// The agent window's plan and checklist. A plan-first task is planning
// while the model writes its plan, which streams into the planning card
// (llm_stream events); then planReview: the user approves the plan, edits
// it (which also starts the agent), asks for changes in words (the model
// rewrites it, streaming again) or cancels the task; planFailed shows the
// reason. While the agent works, its checklist (the todo tool, seeded from
// the approved plan's items) ticks off.
import { $, fill, h, patch, report, toast } from './common.js';

/**
 * Wires the plan cards and the checklist of the task at path. update
 * takes the task an action answered with; refresh asks for it again.
 * Answers {render(task), onLive(data) → whether it was the plan's}.
 */
export function planPanel({ path, update, refresh }) {
  let planShown = '';
  let editing = false;
  let todoShown = '';

  const show = (el, on) => { el.hidden = !on; };

  function render(t) {
    const reviewing = t.status === 'planReview';
    const revising = !!t.planRevision;
    show($('#planning-card'), t.status === 'planning' || (t.status === 'queued' && revising));
    $('#planning-title').textContent = revising ? 'Rewriting the plan…' : 'Planning…';
    $('#planning-what').textContent = revising
      ? `The model rewrites the plan as you asked: “${t.planRevision}”. You review it again before the agent starts.`
      : 'The model is writing a plan for this task. You review it before the agent starts; no VM is used until then.';
    // The text of a plan being written stays until the plan is under
    // review (a queued task may be about to plan, or be planned again).
    if (t.status !== 'planning' && t.status !== 'queued') clearLive();
    show($('#plan-card'), reviewing);
    show($('#plan-failed-card'), t.status === 'planFailed');
    if (t.status === 'planFailed') $('#plan-failed-reason').textContent = t.resultSummary || 'The model gave no usable plan.';
    renderTodo(t.todo || []);
    if (!reviewing) { planShown = ''; setEditing(false); return; }
    const failed = /^the plan could not be rewritten/.test(t.statusReason || '');
    show($('#plan-note'), failed);
    if (failed) $('#plan-note').textContent = `${t.statusReason[0].toUpperCase()}${t.statusReason.slice(1)}. The plan below is the one you had.`;
    // A plan being edited is never overwritten by a refresh.
    if (!editing && planShown !== (t.planMarkdown || '')) {
      planShown = t.planMarkdown || '';
      $('#plan-text').value = planShown;
    }
  }

  function setEditing(on) {
    editing = on;
    const box = $('#plan-text');
    box.readOnly = !on;
    show($('#plan-approve'), !on);
    show($('#plan-edit'), !on);
    show($('#plan-run-edited'), on);
    show($('#plan-discard'), on);
    show($('#plan-revise-form'), !on);
    $('#plan-hint').textContent = on
      ? 'Edit the plan, then run it: the agent starts with your version.'
      : 'Approve it to start the agent, edit it yourself, ask the model for changes, or cancel the task.';
    if (on) box.focus();
  }

  const buttons = () => document.querySelectorAll('#plan-card button, #planning-card button');

  async function act(body, done) {
    if (body.action === 'cancel_plan' && !confirm('Cancel this task?')) return;
    if (body.action === 'edit_plan' && !body.planMarkdown.trim()) {
      toast('The plan is empty: write one, or cancel the task.');
      return;
    }
    if (body.action === 'revise_plan' && !body.instructions.trim()) {
      toast('Say what to change in the plan first.');
      $('#plan-revise').focus();
      return;
    }
    for (const b of buttons()) b.disabled = true;
    try {
      const t = await patch(path, body);
      setEditing(false);
      update(t);
      toast(done);
      if (body.action === 'revise_plan') $('#plan-revise').value = '';
    } catch (err) { report(err); }
    for (const b of buttons()) b.disabled = false;
    refresh();
  }

  $('#plan-approve').addEventListener('click', () => act({ action: 'approve_plan' }, 'Plan approved: the agent starts when a VM is free.'));
  $('#plan-edit').addEventListener('click', () => setEditing(true));
  $('#plan-discard').addEventListener('click', () => {
    $('#plan-text').value = planShown;
    setEditing(false);
  });
  $('#plan-run-edited').addEventListener('click', () => act({ action: 'edit_plan', planMarkdown: $('#plan-text').value }, 'Plan approved: the agent starts when a VM is free.'));
  $('#plan-revise-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act({ action: 'revise_plan', instructions: $('#plan-revise').value }, 'Asked for changes: the model rewrites the plan.');
  });
  $('#plan-cancel').addEventListener('click', () => act({ action: 'cancel_plan' }, 'Task cancelled.'));
  $('#planning-cancel').addEventListener('click', () => act({ action: 'cancel_plan' }, 'Task cancelled.'));

  // ---- The plan as it is written ------------------------------------------------

  function clearLive() {
    $('#planning-text').textContent = '';
    $('#planning-text').hidden = true;
  }

  /**
   * Takes an llm_stream event's data; answers whether it was the plan's:
   * a plan streams as step 0 (an agent's steps count from 1).
   */
  function onLive(d) {
    if (d.step !== 0) return false;
    const box = $('#planning-text');
    if (d.reset) box.textContent = '';
    box.textContent += d.text || '';
    box.hidden = !box.textContent;
    box.scrollTop = box.scrollHeight;
    return true;
  }

  // ---- The checklist --------------------------------------------------------------

  function renderTodo(items) {
    const key = JSON.stringify(items);
    if (key === todoShown) return;
    todoShown = key;
    show($('#checklist-panel'), items.length > 0);
    const done = items.filter((it) => it.done).length;
    $('#checklist-count').textContent = `${done} of ${items.length} done`;
    fill($('#checklist'), items.map((it) => h('li', { 'data-done': String(it.done), class: it.done ? 'done' : '' },
      h('span', { class: 'mark', 'aria-hidden': 'true' }, it.done ? '✓' : ''),
      h('span', { class: 'text' }, it.text),
      h('span', { class: 'visually-hidden' }, it.done ? ' (done)' : ' (to do)'))));
  }

  return { render, onLive };
}
