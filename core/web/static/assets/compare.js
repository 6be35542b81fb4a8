// Compare: the tasks of one batch (one description run on several models,
// POST /tasks/batch) side by side: status, time, steps, tokens and cost,
// the result, the outputs and the latest screen of each.
import {
  $, TERMINAL, badge, elapsed, every, fileList, fill, fmtCost, fmtDuration, fmtTokens, get, h, initChrome, patch,
  report, seg, statusLabel, toast,
} from './common.js';

initChrome();

const batchId = decodeURIComponent(location.pathname.split('/')[2] || '');
const columns = new Map(); // task id -> {el, parts, full, shotAt}

function makeColumn(t, n) {
  const img = h('img', { class: 'thumb', alt: `Screen of ${t.modelId}`, hidden: true });
  img.addEventListener('load', () => { img.hidden = false; });
  img.addEventListener('error', () => { img.hidden = true; });
  const parts = {
    badge: h('span'), time: h('span', { class: 'elapsed' }), steps: h('dd'), tokens: h('dd'), cost: h('dd'),
    summary: h('p', { class: 'result' }), outputs: h('div'), img,
  };
  const el = h('article', { class: 'card compare-col', 'data-task-id': t.id, 'aria-labelledby': `col-${t.id}` },
    h('h2', { id: `col-${t.id}` }, t.modelId, n > 1 ? h('span', { class: 'muted' }, ` #${n}`) : null),
    h('p', { class: 'muted' }, t.providerName),
    h('div', { class: 'meta' }, parts.badge, parts.time),
    h('a', { href: `/tasks/${seg(t.id)}`, tabindex: '-1', 'aria-hidden': 'true' }, img),
    h('dl', { class: 'facts' }, h('dt', null, 'Steps'), parts.steps, h('dt', null, 'Tokens'), parts.tokens, h('dt', null, 'Cost'), parts.cost),
    h('h3', null, 'Result'), parts.summary,
    h('h3', null, 'Output files'), parts.outputs,
    h('div', { class: 'actions' },
      h('a', { class: 'button small', href: `/tasks/${seg(t.id)}` }, 'Open'),
      h('a', { class: 'button small', href: `/tasks/${seg(t.id)}/replay` }, 'Replay')));
  return { el, parts, shotAt: 0, outputsSig: '' };
}

async function update(c, t) {
  fill(c.parts.badge, badge(t.status));
  c.parts.time.textContent = t.startedAt ? fmtDuration(t.duration ?? elapsed(t)) : 'not started';
  c.parts.steps.textContent = t.stepCount ?? '—';
  c.parts.tokens.textContent = fmtTokens(t.tokenUsage);
  c.parts.cost.textContent = fmtCost(t.costUSD);
  c.parts.summary.textContent = t.resultSummary || t.errorMessage || t.statusReason || statusLabel(t.status);
  const live = t.status === 'running' || t.status === 'paused';
  if (live && Date.now() - c.shotAt > 3000) {
    c.shotAt = Date.now();
    c.parts.img.src = `/api/v1/tasks/${seg(t.id)}/screenshot?t=${c.shotAt}`;
  } else if (!live && !c.shotAt && t.startedAt) {
    c.shotAt = Date.now();
    c.parts.img.src = `/api/v1/tasks/${seg(t.id)}/screenshot?t=${c.shotAt}`;
  }
  const sig = JSON.stringify(t.outputFiles.map((f) => [f.name, f.size]));
  if (sig !== c.outputsSig) {
    c.outputsSig = sig;
    fill(c.parts.outputs, fileList(t.id, t.outputFiles, 'output'));
  }
}

async function refresh() {
  const res = await get(`/tasks?batchId=${seg(batchId)}&limit=200&sort=createdAt&order=asc`);
  $('#compare-empty').hidden = res.tasks.length > 0;
  if (res.tasks.length === 0) return;
  $('#compare-description').textContent = res.tasks[0].description;
  document.title = `Compare: ${res.tasks[0].title} — Hivecrew`;
  $('#compare-title').textContent = res.tasks[0].title;
  const seen = new Map();
  const grid = $('#compare-grid');
  for (const s of res.tasks) {
    const key = `${s.providerName}/${s.modelId}`;
    seen.set(key, (seen.get(key) || 0) + 1);
    if (!columns.has(s.id)) {
      const c = makeColumn(s, seen.get(key));
      columns.set(s.id, c);
      grid.append(c.el);
    }
  }
  // Full tasks: the list leaves out the output files.
  const full = await Promise.all(res.tasks.map((s) => get(`/tasks/${seg(s.id)}`)));
  for (const t of full) await update(columns.get(t.id), t);
  const done = full.filter((t) => TERMINAL.has(t.status)).length;
  $('#compare-meta').textContent = `${full.length} tasks on ${new Set(full.map((t) => `${t.providerName}/${t.modelId}`)).size} models · ${done} finished`;
  $('#compare-cancel').hidden = done === full.length;
  if (done === full.length) poll.stop();
}

$('#compare-cancel').addEventListener('click', async () => {
  if (!confirm('Cancel every unfinished task of this comparison? Their VMs are destroyed.')) return;
  const res = await get(`/tasks?batchId=${seg(batchId)}&limit=200`);
  let n = 0;
  for (const t of res.tasks.filter((x) => !TERMINAL.has(x.status))) {
    try { await patch(`/tasks/${seg(t.id)}`, { action: 'cancel' }); n++; } catch (err) { report(err); }
  }
  toast(`${n} task${n === 1 ? '' : 's'} cancelled.`);
  poll.now();
});

const poll = every(2000, refresh);
