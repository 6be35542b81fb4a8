// What the Evals pages share: a run's state, how far it got, and each
// model's success.
import { fmtDuration, h } from './common.js';

const STATE_LABELS = { running: 'Running', finished: 'Finished', interrupted: 'Interrupted' };

/** Whether a run ended with every result it planned. */
export const complete = (run) => run.state === 'finished' && run.done === run.planned;

/**
 * A run's state as a badge: running, finished, interrupted (killed
 * without ending), or stopped (ended early, by Ctrl+C say).
 */
export function stateBadge(run) {
  const stopped = run.state === 'finished' && !complete(run);
  return h('span', { class: `badge ${stopped ? 'interrupted' : run.state}`, 'data-state': run.state },
    stopped ? 'Stopped' : STATE_LABELS[run.state] || run.state);
}

/** A rate from 0 to 1 as a whole percentage. */
export const pct = (rate) => `${Math.round(rate * 100)}%`;

/** How long a finished run took, or how far a running or stopped one got ("12/62"). */
export function progress(run) {
  if (complete(run) && run.startedAt && run.endedAt) {
    return fmtDuration((Date.parse(run.endedAt) - Date.parse(run.startedAt)) / 1000);
  }
  return `${run.done}/${run.planned}`;
}

/** A model's passes of its runs and their rate, with a meter ("—" before its first result). */
export function score(passes, runs, rate) {
  if (!runs) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'score' },
    h('meter', { class: 'rate', min: '0', max: '1', value: rate, 'aria-hidden': 'true' }),
    ` ${passes}/${runs} · ${pct(rate)}`);
}

/**
 * How many tasks a run ran, from its suite: "41 tasks", or "31 of the
 * suite's 41 tasks" when some were left out (--only) or could not load.
 */
export function taskCount(run) {
  const n = run.suiteTaskCount || run.taskCount;
  const tasks = `${n} task${n === 1 ? '' : 's'}`;
  return run.taskCount === n ? tasks : `${run.taskCount} of the suite's ${tasks}`;
}
