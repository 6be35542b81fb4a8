// The Evals page (issue 22): a real `hivecrew eval run` of a one-task
// suite on two models (real sandboxes, the scripted provider) shows in
// the list while it runs and on its page, which follows it to its end;
// the run's page compares the models and links every result to its
// replay; the report opens in a new tab, sandboxed, its links to replays
// working; a run whose results.json is broken is listed with its error;
// both are deleted from their pages. The guest's checker answers with
// markup: it shows as text on the page and in the report, and no script
// of it runs.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { assertNoProblems, shot, watch } from './lib/browser.mjs';
import { buildCLI } from './lib/helper.mjs';
import { gate, text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('evals');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-evals-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// What a guest could print as its checker's last line.
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';

/** Runs the CLI against the test's helper; answers {code, stdout, stderr}. */
const cli = (...args) => env.helper.cli(env.bin, ...args);

/** A suite of one task whose checker prints XSS when the task is not done. */
function writeSuite() {
  const dir = path.join(tmp, 'evalui-suite');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'done-file.json'), JSON.stringify({
    id: 'done-file', source: 'hivecrew', category: 'files',
    instruction: 'Create the file done.txt in your home folder.',
    evaluator: { checks: [{ type: 'command', command: `test -f ~/done.txt || { echo '${XSS}'; exit 1; }` }] },
    limits: { timeoutMinutes: 5, maxIterations: 5 },
  }));
  return dir;
}

/** Presses Tab until the element sel has the focus (a visible outline), at most 30 times. */
async function tabTo(page, sel) {
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate((s) => document.activeElement === document.querySelector(s) && getComputedStyle(document.activeElement).outlineStyle, sel);
    if (at) {
      assert.notEqual(at, 'none', `${sel} shows its focus`);
      return;
    }
  }
  throw new Error(`Tab never reached ${sel}`);
}

test('the Evals page lists runs, follows a running one, opens its report and deletes runs', { timeout: 300000 }, async () => {
  const { helper, llm } = env;
  await buildCLI(env.bin);

  // No run yet: how to start one.
  const page = await env.page('/evals');
  await page.waitForSelector('#evals-empty:not([hidden])');
  assert.match(await page.textContent('#evals-empty'), /hivecrew eval run SUITE --provider P --model M/);
  assert.equal(await page.getAttribute('nav[aria-label="Main"] a[href="/evals"]', 'aria-current'), 'page');
  await shot(page, 'evals-empty');

  // The large model solves the task once the test lets it; the small one
  // only says it did, so the guest's checker fails and prints markup.
  const held = gate();
  llm.script('"model":"scripted-large"', [held.hold(tool('run_shell', { command: 'touch ~/done.txt' })), text('Created it.')]);
  llm.script('"model":"scripted-small"', [text('Created it.')]);
  const running = cli('eval', 'run', writeSuite(), '--provider', 'Scripted', '--model', 'scripted-large', '--model', 'scripted-small');
  await held.reached;

  // Running: listed with how far it got, and its page says so.
  const row = page.locator('#run-rows tr[data-state="running"]');
  await row.waitFor();
  assert.match(await row.textContent(), /evalui-suite.*Running\s*0\/2/);
  const id = await row.getAttribute('data-run');
  assert.match(id, /^\d{8}-\d{6}-[0-9a-f]{4}$/);
  await row.locator(`a[href="/evals/${id}"]`).click();
  await page.waitForSelector('#run-notice:not([hidden])');
  assert.match(await page.textContent('#run-notice'), /Running: 0 of 2 results so far/);
  assert.equal(await page.isDisabled('#delete-run'), true, 'a running run cannot be deleted');
  assert.equal(await page.isVisible('#delete-hint'), true);

  // The page follows the run to its end.
  held.release();
  const ran = await running;
  assert.equal(ran.code, 0, `eval run: ${ran.stderr}`);
  // The address is where this helper listens (another port than the
  // apiPort setting's: it was started with --addr).
  assert.ok(ran.stdout.includes(`In the web UI: ${helper.base}/evals/${id}\n`), ran.stdout);
  await page.waitForSelector('#run-meta [data-state="finished"]', { timeout: 30000 });
  assert.equal(await page.isHidden('#run-notice'), true);
  assert.equal(await page.isDisabled('#delete-run'), false);
  const rec = (await helper.api('GET', `/api/v1/evals/${id}`)).record;
  const [large, small] = ['scripted-large', 'scripted-small'].map((m) => rec.results.find((r) => r.model === m));
  assert.equal(large.success, true, JSON.stringify(rec.results));
  assert.equal(small.category, 'checker failed');
  assert.ok(small.detail.includes(XSS), `the checker's line is the detail: ${small.detail}`);

  // Each model's success, and the task's result by each with its replay.
  assert.match(await page.textContent('#model-rows tr[data-model="scripted-large"]'), /1\/1 · 100%/);
  assert.match(await page.textContent('#model-rows tr[data-model="scripted-small"]'), /0\/1 · 0%.*checker failed: 1/);
  const cell = page.locator('#task-rows tr[data-task="done-file"] td[data-model="scripted-small"]');
  assert.ok((await cell.textContent()).includes(`checker failed: the check command exited 1: ${XSS}`), await cell.textContent());
  assert.equal(await page.locator('#main img').count(), 0, 'the markup is text, not an element');
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'no script of the guest ran');
  const link = page.locator('#task-rows td[data-model="scripted-large"] a');
  assert.equal(await link.getAttribute('href'), `/tasks/${large.helperTask}/replay`);
  await shot(page, 'eval-run');
  // On a phone the page does not scroll sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the run page fits a phone');
  await shot(page, 'eval-run-phone');
  await page.setViewportSize({ width: 1280, height: 800 });
  await link.click();
  await page.waitForSelector(`#task-link[href="/tasks/${large.helperTask}"]`);
  await page.goBack();
  await page.waitForSelector('#run-meta [data-state="finished"]');

  // The report: core/eval's, in a new tab, sandboxed with no script.
  const [report] = await Promise.all([page.context().waitForEvent('page').then(watch), page.click('#open-report')]);
  await report.waitForLoadState();
  assert.equal(new URL(report.url()).pathname, `/api/v1/evals/${id}/report`);
  const csp = (await page.request.get(`${helper.base}/api/v1/evals/${id}/report`)).headers()['content-security-policy'];
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /sandbox/);
  assert.doesNotMatch(csp, /script|allow-scripts/);
  assert.equal(await report.textContent('h1'), 'Suite evalui-suite');
  assert.ok((await report.textContent('#tasks')).includes(XSS), 'the report shows the markup as text');
  assert.equal(await report.locator('img').count(), 0);
  await shot(report, 'eval-report');
  await report.click(`a[href="/tasks/${small.helperTask}/replay"]`);
  await report.waitForSelector(`#task-link[href="/tasks/${small.helperTask}"]`);
  assert.equal(await report.evaluate(() => window.__xss), undefined);
  assertNoProblems(report);
  await report.close();

  // A run whose results.json is broken is listed with its error and
  // deleted from its page.
  const broken = '20250101-000000-beef';
  fs.mkdirSync(path.join(helper.home, 'Evals', broken));
  fs.writeFileSync(path.join(helper.home, 'Evals', broken, 'results.json'), '{"id": "20250101-000000-beef", "results": [');
  await page.goto(`${helper.base}/evals`);
  const bad = page.locator(`#run-rows tr[data-run="${broken}"]`);
  await bad.waitFor();
  assert.match(await bad.textContent(), /cannot be read: results\.json is malformed/);
  assert.match(await page.textContent(`#run-rows tr[data-run="${id}"]`), /scripted-large\s*1\/1 · 100%.*scripted-small\s*0\/1 · 0%/);
  await shot(page, 'evals-list');
  await bad.locator('a').click();
  await page.waitForSelector('#run-error:not([hidden])');
  assert.equal(await page.isHidden('#open-report'), true);
  page.once('dialog', (d) => d.accept());
  await page.click('#delete-run');
  await page.waitForURL(`${helper.base}/evals`);
  await bad.waitFor({ state: 'detached' });

  // The real run is deleted from its page, by keyboard; its tasks stay.
  await tabTo(page, `#run-rows a[href="/evals/${id}"]`);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#run-meta [data-state="finished"]');
  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); d.accept(); });
  await tabTo(page, '#delete-run');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#evals-empty:not([hidden])');
  assert.match(asked, /Delete the run .* of evalui-suite\? .*tasks and their replays stay/);
  assert.equal(fs.existsSync(path.join(helper.home, 'Evals', id)), false);
  assert.equal((await helper.task(large.helperTask)).status, 'completed');
  await eventually('no run left', async () => (await helper.api('GET', '/api/v1/evals')).total === 0);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  await env.done(page);
});
