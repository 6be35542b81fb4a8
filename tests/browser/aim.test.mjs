// Where the agent aimed, on screen: a scripted model clicks at a point of
// its screenshot in a real sandbox, then drags; the agent window marks the
// click over the screenshot of its step (at x/width, y/height of the
// image's box, at two sizes of the window) with the step's words beside
// it, and the drag as a line from where it starts to where it ends; the
// replay marks the click too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shot } from './lib/browser.mjs';
import { text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('aim');

/**
 * Where the mark's circle centre sits in the box of the image with id
 * imgId, as fractions of its width and height; and the mark's words.
 */
function markAt(page, imgId) {
  return page.evaluate((imgId) => {
    const img = document.getElementById(imgId);
    const circle = document.querySelector('.point-overlay.shown .mark .target circle');
    if (!img || img.hidden || !img.complete || !img.naturalWidth || !circle) return null;
    const box = img.getBoundingClientRect();
    const c = circle.getBoundingClientRect();
    return {
      fx: (c.left + c.width / 2 - box.left) / box.width,
      fy: (c.top + c.height / 2 - box.top) / box.height,
      words: document.querySelector('.point-overlay.shown .mark .caption').textContent,
      boxWidth: box.width,
    };
  }, imgId);
}

/** Fails unless the mark sits at (fx, fy) of the image within 1%. */
async function assertMarkAt(page, imgId, fx, fy, what) {
  const at = await eventually(`the mark on ${what}`, () => markAt(page, imgId));
  assert.ok(Math.abs(at.fx - fx) <= 0.01 && Math.abs(at.fy - fy) <= 0.01,
    `${what}: the mark is at (${at.fx.toFixed(4)}, ${at.fy.toFixed(4)}) of the image, want (${fx.toFixed(4)}, ${fy.toFixed(4)})`);
  return at;
}

test('a click is marked where it aimed on the step\'s screenshot, in the agent window and the replay', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  const M = '[[aim]]';
  llm.script(M, [tool('mouse_click', { x: 412, y: 310 }), tool('mouse_drag', { fromX: 700, fromY: 500, toX: 900, toY: 150 }), text('Clicked.')],
    { success: true, summary: 'Clicked once.' });
  const created = await helper.api('POST', '/api/v1/tasks', { description: `Click the point ${M}` });
  await helper.waitTask(created.id, 'the end', (t) => t.status === 'completed', 90000);

  // What the API says: the point in the pixels of the screenshot the model saw.
  const { events } = await helper.api('GET', `/api/v1/tasks/${created.id}/activity`);
  const click = events.find((e) => e.type === 'tool_call_start' && e.data.point);
  assert.ok(click, 'the click carries its point');
  const p = click.data.point;
  assert.equal(p.x, 412);
  assert.equal(p.y, 310);
  const shotBefore = events.filter((e) => e.seq < click.seq && e.data.screenshot).pop();
  assert.match(shotBefore.data.summary, new RegExp(`^Screenshot ${p.width}x${p.height}$`), 'the point is in the pixels of the screenshot before it');
  const fx = p.x / p.width;
  const fy = p.y / p.height;

  // The agent window: choosing the click's step shows its screenshot with
  // the mark, and the words of the step beside it.
  const page = await env.page(`/tasks/${created.id}`);
  const row = page.locator(`#activity li[data-seq="${click.seq}"]`);
  await row.waitFor();
  assert.match(await row.textContent(), /marked/);
  await row.locator('button').click();
  await page.waitForFunction((url) => {
    const img = document.getElementById('step-shot');
    return !img.hidden && img.complete && img.naturalWidth > 0 && img.src.endsWith(url);
  }, shotBefore.data.screenshot);
  const wide = await assertMarkAt(page, 'step-shot', fx, fy, 'the agent window');
  assert.equal(wide.words, click.data.summary);
  assert.equal(await page.getAttribute('.point-overlay', 'aria-label'), `Marked on the screenshot: ${click.data.summary}`);
  await shot(page, 'aim-agent-window');

  // In a narrower window (one column) the image has another size: the
  // mark follows it.
  await page.setViewportSize({ width: 900, height: 800 });
  await page.waitForFunction((w) => Math.abs(document.getElementById('step-shot').getBoundingClientRect().width - w) > 50, wide.boxWidth);
  await assertMarkAt(page, 'step-shot', fx, fy, 'the agent window, narrower');

  // The drag: a line from its start to its end.
  const drag = events.find((e) => e.type === 'tool_call_start' && e.data.point && e.data.point.toX !== undefined);
  const d = drag.data.point;
  assert.deepEqual([d.x, d.y, d.toX, d.toY], [700, 500, 900, 150]);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.locator(`#activity li[data-seq="${drag.seq}"] button`).click();
  const line = await eventually('the drag\'s line', () => page.evaluate(() => {
    const img = document.getElementById('step-shot');
    const l = document.querySelector('.point-overlay.shown .mark.drag line.path.halo');
    if (!l || !img.complete) return null;
    const b = img.getBoundingClientRect();
    const r = l.getBoundingClientRect();
    return [(r.left - b.left) / b.width, (r.top - b.top) / b.height, (r.right - b.left) / b.width, (r.bottom - b.top) / b.height];
  }));
  const want = [d.x / d.width, d.toY / d.height, d.toX / d.width, d.y / d.height]; // up and to the right
  assert.ok(line.every((v, i) => Math.abs(v - want[i]) <= 0.01), `the drag's line spans ${line.map((v) => v.toFixed(3))}, want ${want.map((v) => v.toFixed(3))}`);
  await shot(page, 'aim-drag');

  // A step without an aim shows its screenshot unmarked.
  const result = events.find((e) => e.seq > click.seq && e.type === 'tool_call_result');
  await page.locator(`#activity li[data-seq="${result.seq}"] button`).click();
  await page.waitForFunction(() => !document.querySelector('.point-overlay.shown'));

  // The replay marks it too, on choosing the click's step.
  await page.goto(`${helper.base}/tasks/${created.id}/replay`);
  await page.locator(`#steps button[data-index="${events.indexOf(click)}"]`).click();
  await page.waitForFunction((url) => document.getElementById('replay-shot').src.endsWith(url), shotBefore.data.screenshot);
  const replay = await assertMarkAt(page, 'replay-shot', fx, fy, 'the replay');
  assert.equal(replay.words, click.data.summary);
  await shot(page, 'aim-replay');
  await env.done(page);
});
