// Environments: every VM of the pool with its state and task (or, for a
// developer VM, a link to its screen); stop or delete one, or several at
// once.
import { $, del, every, fill, fmtTime, get, h, initChrome, post, report, seg, toast } from './common.js';

initChrome();

const selected = new Set();
let vms = [];
let sig = '';

const STATE_LABELS = { busy: 'Busy', ready: 'Idle', booting: 'Starting', suspending: 'Saving to disk', suspended: 'Idle (saved to disk)', stopping: 'Stopping', error: 'Error', stopped: 'Stopped' };

async function refresh() {
  const [res, st] = await Promise.all([get('/vms'), get('/system/status')]);
  vms = res.vms;
  $('#env-summary').textContent = `${st.backend || 'VM'} backend · ${st.vms.active} busy · ${st.vms.available} idle · ${st.vms.pending} starting · ` +
    `up to ${st.agents.maxConcurrent} at once`;
  for (const id of [...selected]) if (!vms.some((v) => v.id === id)) selected.delete(id);
  const next = JSON.stringify(vms.map((v) => [v.id, v.state, v.taskId, v.taskTitle, v.reason, v.lastUsedAt, v.developer]));
  if (next !== sig) {
    sig = next;
    render();
  }
  syncSelection();
}

function render() {
  $('#no-vms').hidden = vms.length > 0;
  fill($('#vm-rows'), vms.map((v) => {
    const label = STATE_LABELS[v.state] || v.state;
    let state;
    if (v.developer) {
      state = h('span', null, 'Developer VM: ', h('a', { href: `/vms/${seg(v.id)}`, 'data-vm-view': v.id }, 'View'));
    } else if (v.state === 'busy' && v.taskId) {
      state = h('span', null, `${label}: `, h('a', { href: `/tasks/${seg(v.taskId)}`, 'data-vm-task': v.taskId }, v.taskTitle || v.taskId));
    } else {
      state = h('span', null, label, v.reason ? h('span', { class: 'hint' }, ` (${v.reason})`) : null);
    }
    const box = h('input', { type: 'checkbox', 'aria-label': `Select ${v.id}`, 'data-vm': v.id, checked: selected.has(v.id) });
    box.addEventListener('change', () => {
      if (box.checked) selected.add(v.id); else selected.delete(v.id);
      syncSelection();
    });
    return h('tr', { 'data-vm-row': v.id, 'data-state': v.state },
      h('td', null, box),
      h('td', { class: 'mono' }, v.id),
      h('td', null, state),
      h('td', { class: 'hide-narrow' }, v.templateId),
      h('td', { class: 'hide-narrow' }, `${v.cpuCount} CPU · ${Math.round(v.memoryMB / 1024 * 10) / 10} GB`, limitsHint(v.limits)),
      h('td', { class: 'hide-narrow' }, v.networkMode),
      h('td', { class: 'hide-narrow' }, fmtTime(v.lastUsedAt || v.createdAt)),
      h('td', null, h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'small', onclick: () => stop([v.id]) }, 'Stop'),
        h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${v.id}`, onclick: () => remove(v.id) }, 'Delete'))));
  }));
}

function syncSelection() {
  const n = selected.size;
  const btn = $('#stop-selected');
  btn.disabled = n === 0;
  btn.textContent = n ? `Stop selected (${n})` : 'Stop selected';
  const all = $('#select-all');
  all.checked = n > 0 && n === vms.length;
  all.indeterminate = n > 0 && n < vms.length;
  for (const b of document.querySelectorAll('#vm-rows input[data-vm]')) b.checked = selected.has(b.dataset.vm);
}

async function stop(ids) {
  const busy = vms.filter((v) => ids.includes(v.id) && v.state === 'busy');
  if (busy.length && !confirm(`${busy.length} of these VMs run a task; stopping fails the task. Stop anyway?`)) return;
  const results = await Promise.allSettled(ids.map((id) => post(`/vms/${seg(id)}/stop`)));
  const failed = results.filter((r) => r.status === 'rejected');
  for (const f of failed) report(f.reason);
  const ok = results.length - failed.length;
  if (ok) toast(`Stopped ${ok} VM${ok === 1 ? '' : 's'}.`);
  for (const id of ids) selected.delete(id);
  poll.now();
}

async function remove(id) {
  if (!confirm(`Delete ${id}? Its disk and shared folder are removed.`)) return;
  try {
    await del(`/vms/${seg(id)}`);
    toast(`Deleted ${id}.`);
  } catch (err) { report(err); }
  selected.delete(id);
  poll.now();
}

$('#select-all').addEventListener('change', (e) => {
  selected.clear();
  if (e.target.checked) for (const v of vms) selected.add(v.id);
  syncSelection();
});
$('#stop-selected').addEventListener('click', () => stop([...selected]));
const poll = every(2000, refresh);
document.addEventListener('hivecrew:stopped', () => poll.now());

// What the host caps for a VM, one line per resource ("Not capped" for
// those it shares with the host).
function limitsHint(l) {
  if (!l) return null;
  const rows = [['Processes', l.processes], ['Memory', l.memory], ['CPU', l.cpu], ['Disk', l.disk], ['Host account', l.uid]];
  return h('div', { class: 'hint' }, rows.map(([k, v]) => h('div', null, `${k}: ${v || 'not capped'}`)));
}
