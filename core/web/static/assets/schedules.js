// Schedules: the list (when each runs, its next and last run, on or off,
// run now, edit, delete) and the form that creates or edits one: a title,
// the new-task form's fields (taskform.js) and when it runs, once or
// daily, weekly or monthly at a time of day in a time zone.
import { $, del, every, fill, fmtTime, get, h, humanize, initChrome, patch, post, put, report, seg, toast } from './common.js';
import { taskForm } from './taskform.js';

initChrome();

const status = $('#form-status');
const form = taskForm({ status });
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']; // the API's 1..7
let editing = null; // the schedule being edited, or null
let shown = null; // the schedules listed (null before the first reading)

// ---- Time zones ------------------------------------------------------------------

/** Whether this browser knows tz as a time zone. */
function knownZone(tz) {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The wall clock in tz at instant ms: {y, mo, d, hh, mi, ss}. */
function wall(ms, tz) {
  const f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, Number(x.value)]));
  return { y: p.year, mo: p.month, d: p.day, hh: p.hour % 24, mi: p.minute, ss: p.second };
}

/** The instant (ISO) at which the clock in tz reads local, "YYYY-MM-DDTHH:MM". */
function zonedInstant(local, tz) {
  const [date, time] = local.split('T');
  const [y, mo, d] = date.split('-').map(Number);
  const [hh, mi] = time.split(':').map(Number);
  const reading = Date.UTC(y, mo - 1, d, hh, mi);
  const offset = (ms) => {
    const w = wall(ms, tz);
    return Date.UTC(w.y, w.mo - 1, w.d, w.hh, w.mi, w.ss) - Math.floor(ms / 1000) * 1000;
  };
  // Twice: the offset at the first guess may be the other side of a change.
  let at = reading - offset(reading);
  at = reading - offset(at);
  return new Date(at).toISOString();
}

/** "YYYY-MM-DDTHH:MM" as the clock in tz reads at an ISO instant. */
function localInput(iso, tz) {
  const w = wall(Date.parse(iso), tz);
  const two = (n) => String(n).padStart(2, '0');
  return `${w.y}-${two(w.mo)}-${two(w.d)}T${two(w.hh)}:${two(w.mi)}`;
}

// ---- What a schedule says ------------------------------------------------------

const two = (n) => String(n).padStart(2, '0');

/** Whether two zone names are the browser's one zone (UTC has several names). */
function sameZone(a, b) {
  const utc = (z) => ['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT', 'Etc/Universal', 'Universal', 'Zulu'].includes(z);
  return a === b || (utc(a) && utc(b));
}

/** When a schedule runs, in words: "Every Mon, Wed at 08:05 (Europe/Berlin)". */
function describeWhen(s) {
  const zone = s.timeZone && !sameZone(s.timeZone, browserZone) ? ` (${s.timeZone})` : '';
  if (s.scheduleType === 'one-time') {
    return `Once, ${new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: s.timeZone || undefined }).format(new Date(s.scheduledAt))}${zone}`;
  }
  const r = s.recurrence || {};
  const at = `${two(r.hour || 0)}:${two(r.minute || 0)}`;
  switch (r.type) {
    case 'daily': return `Every day at ${at}${zone}`;
    case 'weekly': return `Every ${(r.daysOfWeek || []).map((d) => DAYS[d - 1]).join(', ')} at ${at}${zone}`;
    case 'monthly': return `Monthly on day ${r.dayOfMonth} at ${at}${zone}`;
  }
  return `${r.type} at ${at}${zone}`;
}

/** A schedule's next run in words. */
function nextRun(s) {
  if (!s.isEnabled) return 'Off';
  return s.nextRunAt ? fmtTime(s.nextRunAt) : 'No more runs';
}

// ---- The list -----------------------------------------------------------------

async function refresh() {
  const { schedules } = await get('/schedules?limit=200');
  const key = JSON.stringify(schedules);
  if (key === JSON.stringify(shown)) return;
  shown = schedules;
  fill($('#schedules'), schedules.map(row));
  $('#no-schedules').hidden = schedules.length > 0;
}

function row(s) {
  const files = s.inputFileCount ? ` · ${s.inputFileCount} file${s.inputFileCount === 1 ? '' : 's'}` : '';
  const button = (label, action, cls = 'small') => h('button', { type: 'button', class: cls, 'data-action': action, 'aria-label': `${label}: ${s.title}` }, label);
  const run = button('Run now', 'run', 'small primary');
  const edit = button('Edit', 'edit');
  const toggle = button(s.isEnabled ? 'Turn off' : 'Turn on', 'toggle');
  const remove = button('Delete', 'delete');
  run.addEventListener('click', () => runNow(s, run));
  edit.addEventListener('click', () => startEdit(s));
  toggle.addEventListener('click', () => turn(s, !s.isEnabled, toggle));
  remove.addEventListener('click', () => removeSchedule(s));
  return h('li', { 'data-schedule': s.id, 'data-title': s.title, class: s.isEnabled ? '' : 'off' },
    h('div', { class: 'schedule-head' },
      h('span', { class: 'name' }, s.title),
      h('span', { class: `badge ${s.isEnabled ? 'on' : 'off'}`, 'data-state': s.isEnabled ? 'on' : 'off' }, s.isEnabled ? 'On' : 'Off')),
    h('p', { class: 'what', title: s.description }, `${s.description.slice(0, 120)}${s.description.length > 120 ? '…' : ''}${files}`),
    h('p', { class: 'when' }, describeWhen(s)),
    h('p', { class: 'runs muted' },
      'Next run: ', h('span', { 'data-field': 'next' }, nextRun(s)),
      ' · Last run: ', h('span', { 'data-field': 'last' }, s.lastRunAt ? fmtTime(s.lastRunAt) : 'never')),
    h('div', { class: 'actions' }, run, edit, toggle, remove));
}

async function runNow(s, btn) {
  btn.disabled = true;
  try {
    const t = await post(`/schedules/${seg(s.id)}/run`, {});
    location.href = `/tasks/${seg(t.id)}`;
  } catch (err) {
    report(err);
    btn.disabled = false;
  }
}

async function turn(s, on, btn) {
  btn.disabled = true;
  try {
    const after = await patch(`/schedules/${seg(s.id)}`, { isEnabled: on });
    toast(on ? `“${after.title}” is on: next run ${nextRun(after)}.` : `“${after.title}” is off: it runs no more until you turn it on.`);
    await refresh();
  } catch (err) {
    report(err);
    btn.disabled = false;
  }
}

async function removeSchedule(s) {
  if (!confirm(`Delete the schedule “${s.title}”? Tasks it started stay.`)) return;
  try {
    await del(`/schedules/${seg(s.id)}`);
    if (editing && editing.id === s.id) stopEdit();
    toast(`Deleted “${s.title}”.`);
    await refresh();
  } catch (err) { report(err); }
}

// ---- The form: when -----------------------------------------------------------

function showWhen() {
  const once = $('#when-once').checked;
  $('#when-once-fields').hidden = !once;
  $('#when-recurring-fields').hidden = once;
  const every = $('#when-every').value;
  $('#when-days').hidden = every !== 'weekly';
  $('#when-dom-field').hidden = every !== 'monthly';
}

/** Says what is wrong with a field of the form and focuses it; answers null. */
function problem(message, el) {
  status.textContent = message;
  el.focus();
  return null;
}

/** The timing the form says, as the API's schedule object, or null with the problem said. */
function readWhen() {
  const tz = $('#when-tz').value.trim() || browserZone;
  if (!knownZone(tz)) return problem(`Time zone “${tz}” is not an IANA time zone name (such as Europe/Berlin or America/New_York).`, $('#when-tz'));
  if ($('#when-once').checked) {
    const at = $('#when-at').value;
    if (!at) return problem('Choose the date and time of the run.', $('#when-at'));
    return { scheduledAt: zonedInstant(at, tz), timeZone: tz };
  }
  const time = $('#when-time').value;
  if (!/^\d\d:\d\d/.test(time)) return problem('Choose the time of day it runs.', $('#when-time'));
  const [hour, minute] = time.split(':').map(Number);
  const recurrence = { type: $('#when-every').value, hour, minute };
  if (recurrence.type === 'weekly') {
    recurrence.daysOfWeek = [...document.querySelectorAll('#when-days input:checked')].map((c) => Number(c.value)).sort((a, b) => a - b);
    if (!recurrence.daysOfWeek.length) return problem('Choose at least one day of the week.', $('#when-days input'));
  }
  if (recurrence.type === 'monthly') {
    recurrence.dayOfMonth = Number($('#when-dom').value);
    if (!Number.isInteger(recurrence.dayOfMonth) || recurrence.dayOfMonth < 1 || recurrence.dayOfMonth > 31) {
      return problem('Day of the month: 1 to 31.', $('#when-dom'));
    }
  }
  return { recurrence, timeZone: tz };
}

/** Shows a schedule's timing in the form. */
function fillWhen(s) {
  const once = s.scheduleType === 'one-time';
  $('#when-once').checked = once;
  $('#when-recurring').checked = !once;
  $('#when-tz').value = sameZone(s.timeZone, browserZone) ? '' : s.timeZone || '';
  $('#when-at').value = once ? localInput(s.scheduledAt, s.timeZone || browserZone) : '';
  const r = s.recurrence || { type: 'daily', hour: 9, minute: 0 };
  $('#when-every').value = r.type;
  $('#when-time').value = `${two(r.hour)}:${two(r.minute)}`;
  $('#when-dom').value = String(r.dayOfMonth || 1);
  for (const c of document.querySelectorAll('#when-days input')) c.checked = (r.daysOfWeek || []).includes(Number(c.value));
  showWhen();
}

// ---- The form: create and edit -----------------------------------------------

/** The body of POST or PUT /schedules the form says, or null with the problem said. */
function readForm() {
  status.textContent = '';
  const title = $('#schedule-title').value.trim();
  if (!title) return problem('Give the schedule a title: its tasks are named after it.', $('#schedule-title'));
  const task = form.formTask();
  if (!task) return null;
  const schedule = readWhen();
  if (!schedule) return null;
  return { title, ...task, schedule, isEnabled: $('#schedule-enabled').checked };
}

async function save(e) {
  e.preventDefault();
  const body = readForm();
  if (!body) return;
  const btn = $('#schedule-save');
  btn.disabled = true;
  try {
    let s;
    if (editing) {
      s = await put(`/schedules/${seg(editing.id)}`, body);
      toast(`Saved “${s.title}”: ${nextRun(s) === 'Off' ? 'it is off' : `next run ${nextRun(s)}`}.`);
      stopEdit();
    } else {
      const files = form.files();
      if (files.length) {
        const fd = new FormData();
        fd.append('schedule', JSON.stringify(body));
        for (const f of files) fd.append('files', f, f.name);
        s = await post('/schedules', fd);
      } else {
        s = await post('/schedules', body);
      }
      toast(`Created “${s.title}”: ${nextRun(s) === 'Off' ? 'it is off' : `next run ${nextRun(s)}`}.`);
      clearForm();
    }
    await refresh();
  } catch (err) {
    // What the helper refused, in the form's words, next to the button.
    status.textContent = humanize(err.message);
    report(err);
  }
  btn.disabled = false;
}

function clearForm() {
  $('#schedule-title').value = '';
  form.reset();
  fillWhen({ scheduleType: 'recurring', timeZone: '' });
  $('#schedule-enabled').checked = true;
}

function startEdit(s) {
  editing = s;
  $('#schedule-form-title').textContent = `Edit “${s.title}”`;
  $('#schedule-save').textContent = 'Save changes';
  $('#schedule-edit-cancel').hidden = false;
  $('#schedule-title').value = s.title;
  form.fillFrom(s);
  form.keepFiles(s.inputFiles || [], s.inputFiles && s.inputFiles.length
    ? 'These input files stay with the schedule; to change them, make a new schedule.'
    : 'A schedule gets its input files when it is made; to add some, make a new schedule.');
  fillWhen(s);
  $('#schedule-enabled').checked = s.isEnabled;
  status.textContent = '';
  $('#schedule-form').scrollIntoView({ block: 'start' });
  $('#schedule-title').focus();
}

function stopEdit() {
  editing = null;
  $('#schedule-form-title').textContent = 'New schedule';
  $('#schedule-save').textContent = 'Create schedule';
  $('#schedule-edit-cancel').hidden = true;
  clearForm();
}

// ---- Start ---------------------------------------------------------------------

$('#when-tz').placeholder = browserZone;
if (Intl.supportedValuesOf) {
  fill($('#when-zones'), Intl.supportedValuesOf('timeZone').map((z) => h('option', { value: z })));
}
for (const el of document.querySelectorAll('input[name="when-kind"], #when-every')) el.addEventListener('change', showWhen);
$('#schedule-form').addEventListener('submit', save);
$('#schedule-edit-cancel').addEventListener('click', stopEdit);
form.load().then(({ providers }) => { $('#no-provider-notice').hidden = providers.length > 0; }).catch(report);
showWhen();
every(5000, refresh);
