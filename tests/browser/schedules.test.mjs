// The Schedules page (issue 36.3) against a real helper and the scripted
// provider: the form (the new-task form's fields, shared with the
// dashboard) creates a weekly schedule with a file and advanced options;
// what is wrong is said in words, by the page and by the helper; the
// schedule is edited in the same form, turned off and on, run now (its
// task gets the file and the options) and deleted.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('schedules');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-schedules-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const api = (method, p, body) => env.helper.api(method, `/api/v1${p}`, body);

/** The one schedule the helper has. */
async function theSchedule() {
  const { schedules } = await api('GET', '/schedules');
  assert.equal(schedules.length, 1, `schedules: ${JSON.stringify(schedules)}`);
  return schedules[0];
}

test('a schedule is created with a file and options, edited, turned off and on, run now and deleted', { timeout: 180000 }, async () => {
  const { llm, helper } = env;
  const M = '[[scheduled-notes]]';
  llm.script(M, [tool('read_file', { path: 'inbox/notes.txt' }), text('Read them.')], { success: true, summary: 'Summarised the notes.' });
  const notes = path.join(tmp, 'notes.txt');
  fs.writeFileSync(notes, 'the scheduled file says hello\n');

  const page = await env.page('/schedules');
  assert.equal(await page.getAttribute('nav[aria-label="Main"] a[href="/schedules"]', 'aria-current'), 'page');
  await page.waitForSelector('#no-schedules:not([hidden])');
  await page.waitForSelector('#task-provider option[value="Scripted"]', { state: 'attached' });

  // What is wrong, in words: the page's own checks, then the helper's.
  await page.click('#schedule-save');
  assert.match(await page.textContent('#form-status'), /Give the schedule a title/);
  await page.fill('#schedule-title', 'Morning notes');
  await page.fill('#task-description', `Summarise notes.txt ${M}`);
  await page.selectOption('#when-every', 'weekly');
  await page.click('#schedule-save');
  assert.equal(await page.textContent('#form-status'), 'Choose at least one day of the week.');
  await page.check('#when-once');
  await page.fill('#when-at', '2020-01-02T09:00');
  await page.click('#schedule-save');
  await page.waitForFunction(() => /the run time 2020-01-02T\d\d:00:00Z is in the past/.test(document.querySelector('#form-status').textContent));
  await page.locator('.toast.error', { hasText: 'is in the past' }).waitFor();
  assert.equal((await api('GET', '/schedules')).schedules.length, 0, 'nothing was created');

  // Created: weekly on Monday and Wednesday in Berlin, with a file, a
  // time limit, a variable and a plan first.
  await page.check('#when-recurring');
  await page.check('#when-days input[value="2"]');
  await page.check('#when-days input[value="4"]');
  await page.fill('#when-time', '08:05');
  await page.fill('#when-tz', 'Europe/Berlin');
  await page.setInputFiles('#task-files', notes);
  await page.click('#advanced summary');
  await page.fill('#task-timeout', '9');
  await page.fill('#task-env', 'MODE=quiet');
  await page.check('#task-plan-first');
  await page.click('#schedule-save');
  const row = page.locator('#schedules li[data-title="Morning notes"]');
  await row.waitFor();
  assert.equal(await page.textContent('#form-status'), '');
  assert.equal(await row.locator('.when').textContent(), 'Every Mon, Wed at 08:05 (Europe/Berlin)');
  assert.doesNotMatch(await row.locator('[data-field="next"]').textContent(), /Off|No more/);
  assert.match(await row.locator('.what').textContent(), /Summarise notes\.txt.*1 file/);
  let s = await theSchedule();
  assert.deepEqual(s.recurrence, { type: 'weekly', daysOfWeek: [2, 4], hour: 8, minute: 5 });
  assert.equal(s.timeZone, 'Europe/Berlin');
  assert.equal(s.timeoutMinutes, 9);
  assert.equal(s.planFirst, true);
  assert.deepEqual(s.provisioning, { environment: { MODE: 'quiet' } });
  assert.deepEqual(s.inputFiles.map((f) => f.name), ['notes.txt']);
  assert.equal(await page.inputValue('#schedule-title'), '', 'the form is cleared for the next one');

  // Edited in the same form: it shows the schedule, keeps its file, and
  // saves what changed.
  await row.locator('button[data-action="edit"]').click();
  assert.equal(await page.textContent('#schedule-form-title'), 'Edit “Morning notes”');
  assert.equal(await page.inputValue('#schedule-title'), 'Morning notes');
  assert.equal(await page.inputValue('#task-description'), `Summarise notes.txt ${M}`);
  assert.equal(await page.inputValue('#task-timeout'), '9');
  assert.equal(await page.inputValue('#task-env'), 'MODE=quiet');
  assert.equal(await page.isChecked('#task-plan-first'), true);
  assert.equal(await page.inputValue('#when-tz'), 'Europe/Berlin');
  assert.equal(await page.isChecked('#when-days input[value="4"]'), true);
  assert.equal(await page.inputValue('#when-time'), '08:05');
  assert.match(await page.textContent('#file-list'), /notes\.txt/);
  assert.equal(await page.isDisabled('#task-files'), true, 'a schedule keeps the files it was made with');
  await page.selectOption('#when-every', 'daily');
  await page.fill('#when-time', '07:30');
  await page.uncheck('#task-plan-first');
  await page.fill('#task-max-iterations', '12');
  await page.click('#schedule-save');
  await row.locator('.when', { hasText: 'Every day at 07:30 (Europe/Berlin)' }).waitFor();
  assert.equal(await page.textContent('#schedule-form-title'), 'New schedule');
  s = await theSchedule();
  assert.deepEqual(s.recurrence, { type: 'daily', hour: 7, minute: 30 });
  assert.equal(s.planFirst, undefined, 'plan first is off');
  assert.equal(s.maxIterations, 12);
  assert.equal(s.timeoutMinutes, 9);
  assert.equal(s.inputFileCount, 1);

  // Off, then on.
  await row.locator('button[data-action="toggle"]', { hasText: 'Turn off' }).click();
  await row.locator('[data-state="off"]').waitFor();
  assert.equal(await row.locator('[data-field="next"]').textContent(), 'Off');
  assert.equal((await theSchedule()).isEnabled, false);
  await row.locator('button[data-action="toggle"]', { hasText: 'Turn on' }).click();
  await row.locator('[data-state="on"]').waitFor();
  assert.equal((await theSchedule()).isEnabled, true);
  assert.notEqual(await row.locator('[data-field="next"]').textContent(), 'Off');

  // Run now: its task has the schedule's title, file and options.
  assert.equal(await row.locator('[data-field="last"]').textContent(), 'never');
  await row.locator('button[data-action="run"]').click();
  await page.waitForURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/')[2]);
  const done = await helper.waitTask(id, 'the scheduled task', (t) => t.status === 'completed', 90000);
  assert.equal(done.title, 'Morning notes');
  assert.equal(done.scheduleId, s.id);
  assert.equal(done.timeoutMinutes, 9);
  assert.equal(done.maxIterations, 12);
  assert.match((await llm.waitFor(M, 2))[1], /the scheduled file says hello/, "the agent read the schedule's file");

  // Back on the page: its last run; then deleted (its task stays).
  await page.goto(`${helper.base}/schedules`);
  await eventually('the last run', async () => (await row.locator('[data-field="last"]').textContent()) !== 'never');
  page.once('dialog', (d) => d.accept());
  await row.locator('button[data-action="delete"]').click();
  await row.waitFor({ state: 'detached' });
  await page.waitForSelector('#no-schedules:not([hidden])');
  assert.equal((await api('GET', '/schedules')).schedules.length, 0);
  assert.equal((await helper.task(id)).status, 'completed', 'the task it started stays');
  await env.done(page);
});

test('a one-off run in another time zone is the moment its clock reads', { timeout: 60000 }, async () => {
  const page = await env.page('/schedules');
  await page.waitForSelector('#task-provider option[value="Scripted"]', { state: 'attached' });
  await page.fill('#schedule-title', 'New York lunch');
  await page.fill('#task-description', 'Order lunch');
  await page.check('#when-once');
  await page.fill('#when-at', '2099-07-01T12:30');
  await page.fill('#when-tz', 'America/New_York');
  await page.click('#schedule-save');
  const row = page.locator('#schedules li[data-title="New York lunch"]');
  await row.waitFor();
  const s = (await api('GET', '/schedules')).schedules.find((x) => x.title === 'New York lunch');
  // 12:30 in New York in July (EDT, UTC-4) is 16:30 UTC.
  assert.equal(s.scheduledAt, '2099-07-01T16:30:00Z');
  assert.equal(s.timeZone, 'America/New_York');
  assert.match(await row.locator('.when').textContent(), /^Once, .*12:30.*\(America\/New_York\)$/);
  await row.locator('button[data-action="edit"]').click();
  assert.equal(await page.inputValue('#when-at'), '2099-07-01T12:30', 'the form shows the clock of the zone, not the browser\'s');
  await page.click('#schedule-edit-cancel');
  await api('DELETE', `/schedules/${s.id}`);
  await env.done(page);
});
