// Evals: the runs of `hivecrew eval run` (tests/eval/README.md), the
// newest first: each one's suite, when it started, how long it took or
// how far it got, each model's success and the tasks that could not run.
// A run opens its page; the list follows runs as their results come in.
import { $, every, fill, fmtTime, get, h, initChrome, seg } from './common.js';
import { complete, progress, score, stateBadge, taskCount } from './evalparts.js';

initChrome();

let sig = '';

async function refresh() {
  const res = await get('/evals');
  const next = JSON.stringify([res.total, res.runs.map((r) => [r.id, r.state, r.updatedAt, r.done, r.error])]);
  if (next === sig) return;
  sig = next;
  const none = res.runs.length === 0;
  $('#evals-empty').hidden = !none;
  $('#runs-panel').hidden = none;
  const running = res.runs.filter((r) => r.state === 'running').length;
  $('#evals-summary').textContent = none ? '' : `${res.total} run${res.total === 1 ? '' : 's'}${running ? ` · ${running} running` : ''}`;
  const more = $('#runs-truncated');
  more.hidden = !res.truncated;
  more.textContent = res.truncated
    ? `Showing the newest ${res.runs.length} of ${res.total} runs. The others are in the Evals folder of the helper's data directory; hivecrew eval report RUN writes the report of any of them.`
    : '';
  fill($('#run-rows'), res.runs.map(row));
}

function row(r) {
  // Runs of one suite differ by id: say it in the link's name too.
  const link = h('a', { href: `/evals/${seg(r.id)}` }, r.suite || r.id, r.suite ? h('span', { class: 'visually-hidden' }, `, run ${r.id}`) : null);
  if (r.error) {
    return h('tr', { 'data-run': r.id, 'data-state': r.state },
      h('td', null, link, h('div', { class: 'hint error-text' }, `Its results cannot be read: ${r.error}`)),
      h('td', { class: 'hide-narrow' }, fmtTime(r.updatedAt)),
      h('td', null, '—'), h('td', null, '—'), h('td', { class: 'hide-narrow' }, '—'));
  }
  return h('tr', { 'data-run': r.id, 'data-state': r.state },
    h('td', null, link, h('div', { class: 'hint' }, h('span', { class: 'mono' }, r.id), ` · ${r.provider} · `, h('span', { class: 'run-tasks' }, taskCount(r)))),
    h('td', { class: 'hide-narrow' }, fmtTime(r.startedAt)),
    h('td', { class: 'progress' }, complete(r) ? null : [stateBadge(r), ' '], progress(r)),
    h('td', null, h('ul', { class: 'scores' }, r.scores.map((s) => h('li', { 'data-model': s.model },
      h('span', { class: 'model' }, s.model), score(s.passes, s.runs, s.rate))))),
    h('td', { class: 'hide-narrow' }, r.problems ? `${r.problems} task${r.problems === 1 ? '' : 's'} could not run` : '—'));
}

every(3000, refresh);
