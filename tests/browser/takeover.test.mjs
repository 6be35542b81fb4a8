// Takeover in the browser: while the user is in control, a click on the
// live screen lands at the right point of the guest's screen and typed text
// arrives — both seen by a GTK window inside the sandbox guest, which logs
// what it receives — and handing back resumes the agent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gate, text, tool } from './lib/llm.mjs';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('takeover');

// A full-screen GTK window in the guest: a text entry on top (it logs its
// text on Enter) and an area below that logs every button press with its
// root coordinates, the guest's logical points.
const PROBE = `
import os, gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk, Gdk
log = open(os.path.join(os.environ.get('HIVECREW_SHARED', '.'), 'probe.log'), 'a', buffering=1)
win = Gtk.Window(title='probe')
win.set_decorated(False)
win.move(0, 0)
win.set_default_size(1280, 800)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
entry = Gtk.Entry()
area = Gtk.EventBox()
area.add_events(Gdk.EventMask.BUTTON_PRESS_MASK)
area.override_background_color(Gtk.StateFlags.NORMAL, Gdk.RGBA(0.9, 0.5, 0.1, 1))
def press(w, e):
    log.write('press %d %d %d\\n' % (round(e.x_root), round(e.y_root), e.button))
    return False
area.connect('button-press-event', press)
entry.connect('activate', lambda e: log.write('text %s\\n' % e.get_text()))
box.pack_start(entry, False, False, 0)
box.pack_start(area, True, True, 0)
win.add(box)
win.connect('map-event', lambda *a: log.write('ready\\n'))
win.connect('destroy', Gtk.main_quit)
win.show_all()
entry.grab_focus()
Gtk.main()
`;

test('take over: clicks land at the right guest point, typed text arrives, hand back resumes', { timeout: 150000 }, async () => {
  const { helper, llm } = env;
  const hold = gate();
  const M = '[[takeover]]';
  llm.script(M, [
    tool('write_file', { path: 'probe.py', contents: PROBE }),
    tool('run_shell', { command: '/usr/bin/python3 probe.py >probe.out 2>&1 & for i in $(seq 100); do grep -q ready probe.log 2>/dev/null && break; sleep 0.1; done; cat probe.log' }),
    hold.hold(tool('wait', { seconds: 0.1 })),
    tool('run_shell', { command: 'cat probe.log' }),
    text('Read what the user did.'),
  ], { success: true, summary: 'The user clicked and typed.' });
  const task = await helper.api('POST', '/api/v1/tasks', { description: `Let the user show something ${M}`, toolPolicy: { run_shell: 'allow' } });
  const page = await env.page(`/tasks/${task.id}`);

  await hold.reached;
  const started = llm.bodies(M);
  assert.match(started[2], /ready/, `the probe window is up in the guest: ${started[2].slice(-300)}`);
  // The live screen shows the probe's orange area.
  await eventually('the probe on the live screen', () => page.evaluate(() => {
    const img = document.getElementById('live');
    if (img.hidden || !img.naturalWidth) return false;
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    c.getContext('2d').drawImage(img, 0, 0);
    const d = c.getContext('2d').getImageData(640, 400, 1, 1).data;
    return d[0] > 200 && d[1] > 100 && d[1] < 160 && d[2] < 80;
  }));

  assert.equal(await page.locator('#btn-native').isHidden(), true, 'no native VM window in a browser on the sandbox backend');
  await page.click('#btn-takeover');
  await page.waitForSelector('#control-banner:not([hidden])');
  assert.match(await page.textContent('#control-banner'), /You are in control/);
  await page.waitForSelector('#task-meta [data-status="paused"]');
  assert.equal((await helper.task(task.id)).takenOver, true);
  hold.release(); // the model's answer comes while the user is in control: the agent does not act on it

  // The live image is shown smaller than the guest's screen: the click's
  // position maps through the displayed size to guest points.
  const box = await page.locator('#live').boundingBox();
  assert.ok(box.width < 1000, `the live screen is scaled (${box.width}px wide)`);
  const px = Math.round(box.x + box.width * 0.3217);
  const py = Math.round(box.y + box.height * 0.5463);
  const want = [Math.round(((px - box.x) / box.width) * 1280), Math.round(((py - box.y) / box.height) * 800)];
  await page.mouse.click(px, py);
  await page.keyboard.type('hello guest');
  await page.keyboard.press('Enter');
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(llm.bodies(M).length, 3, 'the agent did not act while the user was in control');

  await page.click('#banner-handback');
  await page.waitForSelector('#control-banner', { state: 'hidden' });
  await page.waitForSelector('#task-meta [data-status="running"], #task-meta [data-status="completed"]');
  const after = await llm.waitFor(M, 5);
  const log = after[4];
  const press = log.match(/press (\d+) (\d+) 1/);
  assert.ok(press, `the guest saw no click: ${log.slice(-400)}`);
  const got = [Number(press[1]), Number(press[2])];
  assert.ok(Math.abs(got[0] - want[0]) <= 1 && Math.abs(got[1] - want[1]) <= 1, `click landed at ${got}, want ${want}`);
  assert.match(log, /text hello guest/, 'the typed text and Enter arrived in the guest');

  await page.waitForSelector('#task-meta [data-status="completed"]', { timeout: 60000 });
  assert.equal(await page.textContent('#result-summary'), 'The user clicked and typed.');
  await env.done(page);
});

test('inside the app the agent window offers the VM\'s own window; the sandbox backend says it has none', { timeout: 90000 }, async () => {
  const { helper, llm } = env;
  const g = gate();
  llm.script('[[native]]', [g.hold(tool('wait', { seconds: 0.1 }))]);
  const task = await helper.api('POST', '/api/v1/tasks', { description: 'Wait for the user [[native]]' });
  await g.reached;
  const page = await env.page(`/tasks/${task.id}`, { userAgent: 'Mozilla/5.0 (Macintosh) AppleWebKit HivecrewApp/1' });
  await page.waitForSelector('#task-meta [data-status="running"]');
  await page.click('#btn-native');
  await page.waitForSelector('#toasts .toast.error >> text=has no native window');
  const t = await helper.task(task.id);
  assert.equal(t.status, 'running');
  assert.equal(!!t.takenOver, false);
  assert.equal(await page.locator('#control-banner').isHidden(), true);
  await helper.api('PATCH', `/api/v1/tasks/${task.id}`, { action: 'cancel' });
  await env.done(page);
});
