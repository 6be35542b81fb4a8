// One eval run (/evals/{id}): each model's success, cost and failures,
// the grid of each task's results by each model with a link to every
// replay, the tasks that could not run, the HTML report (opened in a new
// tab: the helper serves it sandboxed, without script) and Delete. A
// run that has not ended refreshes itself. Text from results.json (a
// checker's output, the suite's names) only ever becomes text nodes.
import { $, ApiError, del, every, fill, fmtCost, fmtDuration, fmtTime, get, h, initChrome, report, seg } from './common.js';
import { complete, pct, progress, score, stateBadge, taskCount } from './evalparts.js';

initChrome();

const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const numbers = new Intl.NumberFormat();
let run = null;
let sig = '';

async function refresh() {
  let res;
  try {
    res = await get(`/evals/${seg(id)}`);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 400)) {
      fill($('#main'), h('section', { class: 'panel signin' }, h('h1', null, 'Eval run not found'),
        h('p', null, 'There is no eval run ', h('code', null, id), '. ', h('a', { href: '/evals' }, 'Back to Evals'), '.')));
      poll.stop();
      return;
    }
    throw err;
  }
  run = res.run;
  const next = JSON.stringify([run.state, run.updatedAt, run.done, run.error]);
  if (next !== sig) {
    sig = next;
    render(res);
  }
  if (run.state === 'finished') poll.stop(); // an interrupted run may yet go on (a laptop that slept)
}

function render(res) {
  const r = res.run;
  const title = r.suite ? `Suite ${r.suite}` : `Run ${r.id}`;
  document.title = `${title} — Evals — Hivecrew`;
  $('#run-title').textContent = title;
  fill($('#run-meta'), r.error ? null : stateBadge(r), h('span', { class: 'mono' }, r.id),
    r.error ? null : [
      h('span', null, `started ${fmtTime(r.startedAt)}`), h('span', null, `provider ${r.provider}`),
      h('span', { id: 'run-tasks' }, `${taskCount(r)} × ${r.repeat} run${r.repeat === 1 ? '' : 's'} per model`),
      h('span', { id: 'run-progress' }, complete(r) ? `took ${progress(r)}` : `${progress(r)} results`),
    ]);
  const readable = !r.error;
  const reportURL = `/api/v1/evals/${seg(r.id)}/report`;
  for (const [sel, href] of [['#open-report', reportURL], ['#download-report', `${reportURL}?download=1`]]) {
    const a = $(sel);
    a.hidden = !readable;
    a.href = href;
  }
  $('#download-report').setAttribute('download', `eval-${r.id}.html`);
  const running = r.state === 'running';
  $('#delete-run').hidden = false;
  $('#delete-run').disabled = running;
  $('#delete-hint').hidden = !running;
  const notice = $('#run-notice');
  notice.hidden = readable && complete(r);
  if (running) notice.textContent = `Running: ${r.done} of ${r.planned} results so far. This page follows the run.`;
  else if (r.state === 'interrupted' && readable) notice.textContent = `This run stopped before it ended: ${r.done} of ${r.planned} results. Its hivecrew eval run has not written to it for minutes (it was killed, or the computer slept).`;
  else if (readable) notice.textContent = `The run was stopped before the end: ${r.done} of ${r.planned} results.`;
  else notice.hidden = true;
  const error = $('#run-error');
  error.hidden = readable;
  error.textContent = readable ? '' : `The results of this run cannot be read: ${r.error}`;
  for (const sel of ['#models-panel', '#tasks-panel']) $(sel).hidden = !readable;
  $('#problems-panel').hidden = !readable || !res.record.problems?.length;
  if (!readable) return;
  fill($('#model-rows'), res.summary.models.map(modelRow));
  renderGrid(res.summary, res.record.results);
  fill($('#problems'), (res.record.problems || []).map((p) => h('li', null,
    h('code', null, p.file), p.id ? ` (${p.id})` : '', `: ${p.error}`)));
}

function modelRow(m) {
  const failures = Object.entries(m.failures).sort(([a], [b]) => a.localeCompare(b));
  return h('tr', { 'data-model': m.model },
    h('th', { scope: 'row' }, m.model),
    h('td', null, score(m.passes, m.runs, m.rate)),
    h('td', { class: 'hide-narrow num' }, m.runs ? `${pct(m.low)} – ${pct(m.high)}` : '—'),
    h('td', { class: 'hide-narrow num' }, fmtCost(m.costUSD)),
    h('td', { class: 'hide-narrow num' }, fmtCost(m.costPerSuccess)),
    h('td', { class: 'hide-narrow num' }, m.runs ? fmtDuration(m.meanSeconds) : '—'),
    h('td', { class: 'hide-narrow num' }, m.runs ? m.meanSteps.toFixed(1) : '—'),
    h('td', { class: 'hide-narrow num' }, numbers.format(m.tokens)),
    h('td', null, failures.length ? failures.map(([cat, n]) => h('div', null, `${cat}: ${n}`)) : h('span', { class: 'muted' }, 'none')));
}

/** The tasks by the models: each cell the passes and every result, linked to its replay. */
function renderGrid(summary, results) {
  const models = summary.models.map((m) => m.model);
  fill($('#task-head'), h('th', { scope: 'col' }, 'Task'), models.map((m) => h('th', { scope: 'col' }, m)));
  fill($('#task-rows'), summary.tasks.map((row) => h('tr', { 'data-task': row.task },
    h('th', { scope: 'row' }, row.task),
    row.cells.map((c) => {
      const mine = results.filter((res) => res.task === row.task && res.model === c.model).sort((a, b) => a.attempt - b.attempt);
      return h('td', { 'data-model': c.model },
        c.runs ? h('span', { class: c.passes === c.runs ? 'pass' : 'fail' }, `${c.passes}/${c.runs}`) : h('span', { class: 'muted' }, run.state === 'running' ? 'pending' : '—'),
        mine.map((res) => attempt(row.task, res, mine.length > 1)));
    }))));
}

const DETAIL_MAX = 300;

function attempt(task, res, numbered) {
  const what = res.success ? 'passed' : res.category;
  const label = [h('span', { 'aria-hidden': 'true' }, res.success ? '✓ ' : '✗ '), numbered ? `#${res.attempt} ` : '', what];
  const name = `${numbered ? `#${res.attempt} ` : ''}${what} (${task}, ${res.model}): open the replay`;
  const detail = !res.success && res.detail
    ? h('span', { class: 'detail', title: res.detail.length > DETAIL_MAX ? res.detail : null },
      `: ${res.detail.length > DETAIL_MAX ? `${res.detail.slice(0, DETAIL_MAX)}…` : res.detail}`)
    : null;
  return h('div', { class: `attempt ${res.success ? 'pass' : 'fail'}` },
    res.helperTask ? h('a', { href: `/tasks/${seg(res.helperTask)}/replay`, 'aria-label': name }, label) : h('span', null, label),
    detail);
}

$('#delete-run').addEventListener('click', async () => {
  if (!run || run.state === 'running') return;
  const what = run.suite ? `the run ${run.id} of ${run.suite}` : `the run ${run.id}`;
  if (!confirm(`Delete ${what}? Its results and report are removed; its tasks and their replays stay.`)) return;
  try {
    await del(`/evals/${seg(id)}`);
    location.assign('/evals');
  } catch (err) { report(err); }
});

const poll = every(2000, refresh);
