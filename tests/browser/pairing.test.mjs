// Device pairing (issue 39), as the Swift app's web client does it: a page
// with no credentials asks for a code through the machine's network
// address (the helper listens on every address, remote access on; the
// desktop's pages use loopback, and pairing is refused from there: every
// program here shares it), the user approves it
// from the CLI, the page's poll receives an HttpOnly cookie, and with it
// the page (its requests from its own origin, as a browser sends them)
// creates a task. The refusals: asking from loopback gets 403; a denied
// code and an expired one get no session; the cookie with a forged
// Origin, or alone with no sign of its site, or sent by a form on another
// port of this host, gets 403; the cookie a program on another port of
// this host received (browsers send it to every port), replayed from
// another address, gets 401 and the device goes on; a device past its
// step-up window cannot give a task more than Settings (403); a revoked
// device gets 401. And the desktop: the dashboard's "Waiting for you"
// strip shows the code and the address, the browser notifies it, Approve
// there signs the device in, and Settings › Devices shows where it paired
// from and revokes it.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { recordNotifications, signIn, watch } from './lib/browser.mjs';
import { buildCLI, networkIP } from './lib/helper.mjs';
import { eventually, suite } from './lib/suite.mjs';

const STEP_UP_MS = 10000;
const TTL_MS = 8000;
const env = suite('pairing', { helperArgs: ['--web-step-up', '10s', '--pairing-ttl', '8s'], network: true });
// The address devices pair through and from here: the machine's, as this
// browser runs on the helper's machine.
const IP = networkIP();
const ipRe = IP.replaceAll('.', '\\.');
// The CLI is built once, when a test first needs it (env.bin is ready then).
let built = null;
const cli = async (...args) => {
  built ??= buildCLI(env.bin);
  await built;
  return env.helper.cli(env.bin, ...args);
};

// Another server on this host (another port): a page of it posts a form
// to the helper, and it keeps the cookies browsers send it.
let other;
const otherGot = [];
before(async () => {
  other = http.createServer((req, res) => {
    if (req.headers.cookie) otherGot.push(req.headers.cookie);
    res.setHeader('Content-Type', 'text/html');
    const action = new URL(req.url, 'http://x').searchParams.get('action');
    res.end(`<!doctype html><form id="f" method="POST" enctype="text/plain" action="${action}">` +
      '<input name=\'{"description":"Posted by another site","x":"\' value=\'"}\'></form>');
  });
  await new Promise((r) => other.listen(0, IP, r));
});
after(() => other?.close());

/**
 * A request to the helper from this machine's loopback address, as
 * another program of this host may send it, with headers as given:
 * answers {status, body (parsed JSON)}.
 */
function fromLoopback(method, urlPath, headers = {}, body) {
  const u = new URL(env.deviceBase + urlPath);
  const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, localAddress: '127.0.0.1',
      headers: { ...headers, ...(data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

/**
 * A browser page of its own (no login link) on the helper's origin at
 * base: by default its network address, as devices reach it.
 */
async function devicePage(base = env.deviceBase) {
  const ctx = await env.browser.newContext();
  const page = watch(await ctx.newPage());
  page.setDefaultTimeout(20000);
  await page.goto(`${base}/api/v1/auth/check`);
  return page;
}

/** fetch() in the page, with its cookies: answers {status, body}. */
function call(page, method, path, body) {
  return page.evaluate(async ([m, p, b]) => {
    const init = { method: m, credentials: 'include', headers: { 'Content-Type': 'application/json' } };
    if (b !== undefined) init.body = JSON.stringify(b);
    const r = await fetch(`/api/v1${p}`, init);
    const text = await r.text();
    let parsed = text;
    try { parsed = JSON.parse(text); } catch { /* text */ }
    return { status: r.status, body: parsed };
  }, [method, path, body]);
}

async function askForCode(page) {
  const r = await call(page, 'POST', '/auth/pair/request');
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.match(r.body.code, /^[0-9]{6}$/);
  assert.equal(r.body.expiresIn, TTL_MS / 1000);
  return r.body;
}

const poll = (page, p) => call(page, 'GET', `/auth/pair/status?id=${encodeURIComponent(p.pairingId)}`);

async function sessionCookie(page) {
  return (await page.context().cookies()).find((c) => c.name === 'hivecrew_session');
}

test('a page pairs by the pairing routes, approved from the CLI, and its cookie works only from its own origin', { timeout: 180000 }, async () => {
  const { helper } = env;
  await cli('version'); // built before any code starts to expire
  // From loopback, which every program here shares, no device pairs: not
  // a page of this machine's loopback origin, nor a program asking from
  // loopback through the network address.
  const localPage = await devicePage(helper.base);
  const fromPage = await call(localPage, 'POST', '/auth/pair/request');
  await localPage.context().close();
  const local = await fromLoopback('POST', '/api/v1/auth/pair/request', { 'User-Agent': 'curl/8' });
  for (const r of [fromPage, local]) {
    assert.equal(r.status, 403, JSON.stringify(r.body));
    assert.match(r.body.error.message, /refused from a loopback address \(127\.0\.0\.1\).*`hivecrew open`.*API key.*network address/);
  }
  assert.deepEqual((await helper.api('GET', '/api/v1/auth/pairings')).pairings, [], 'no code waits for them');

  const page = await devicePage();
  assert.deepEqual((await call(page, 'GET', '/auth/check')).body, { authenticated: false });
  // Without credentials, as Swift's client asks.
  const p = await askForCode(page);
  assert.deepEqual((await poll(page, p)).body, { status: 'pending' });

  const pending = await cli('devices', 'pending');
  assert.equal(pending.code, 0, pending.stderr);
  assert.match(pending.stdout, new RegExp(`^${p.code}\\s+Chrome on Linux\\s+${ipRe}\\s+.*HeadlessChrome/`, 'm'));
  const approved = await cli('devices', 'approve', p.code);
  assert.equal(approved.code, 0, approved.stderr);
  const approvedAt = Date.now();
  assert.match(approved.stdout, new RegExp(`Approved Chrome on Linux \\(code ${p.code}\\)`));

  const st = await poll(page, p);
  assert.deepEqual(st, { status: 200, body: { status: 'approved', deviceName: 'Chrome on Linux' } });
  const cookie = await sessionCookie(page);
  assert.ok(cookie && cookie.value.startsWith('hcd_'), 'the poll set the session cookie');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.ok(cookie.expires * 1000 > Date.now() + 179 * 24 * 3600 * 1000, 'the cookie lasts 180 days');
  assert.equal(await page.evaluate(() => document.cookie.includes('hivecrew_session')), false, 'no script reads it');
  assert.equal((await poll(page, p)).status, 404, 'the session is handed out once');
  assert.deepEqual((await call(page, 'GET', '/auth/check')).body, { authenticated: true, method: 'cookie' });

  // A task, with the cookie and the headers the browser sends from this
  // origin (Origin, Sec-Fetch-Site: same-origin).
  const made = await call(page, 'POST', '/tasks', { description: 'Tidy up [[paired]]' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  assert.equal((await helper.task(made.body.id)).description, 'Tidy up [[paired]]');

  // The cookie with a forged Origin, or alone (a script, an old form).
  const url = `${env.deviceBase}/api/v1/tasks`;
  const forged = await page.context().request.post(url, { headers: { Origin: 'http://evil.example' }, data: { description: 'forged' } });
  assert.equal(forged.status(), 403);
  const bare = await page.context().request.post(url, { data: { description: 'bare' } });
  assert.equal(bare.status(), 403);
  assert.match((await bare.json()).error.message, /comes from this site/);
  // A form another port of this host serves, in a browser holding the
  // cookie (browsers send it to every port of the host). The page is a
  // context of its own: closing a tab that shares the device page's
  // renderer can hang.
  const evilCtx = await env.browser.newContext();
  await evilCtx.addCookies(await page.context().cookies());
  const evil = watch(await evilCtx.newPage());
  await evil.goto(`http://${IP}:${other.address().port}/?action=${encodeURIComponent(url)}`);
  const [answer] = await Promise.all([evil.waitForResponse((r) => r.url() === url), evil.evaluate(() => document.getElementById('f').submit())]);
  assert.equal(answer.status(), 403);
  await evilCtx.close();
  // That server got the cookie, and replays it from another address with
  // every header a page of this site sends: refused, and the device goes on.
  const stolen = otherGot.join('; ').match(/hivecrew_session=(hcd_[^;\s]+)/);
  assert.ok(stolen && stolen[1] === cookie.value, `the other port got the device's cookie (it got ${JSON.stringify(otherGot)})`);
  const replayHeaders = { Cookie: `hivecrew_session=${stolen[1]}`, Origin: env.deviceBase, 'Sec-Fetch-Site': 'same-origin' };
  const replayed = await fromLoopback('POST', '/api/v1/tasks', replayHeaders, { description: 'replayed' });
  assert.equal(replayed.status, 401, JSON.stringify(replayed.body));
  assert.match(replayed.body.error.message, /paired from another network address/);
  assert.equal((await fromLoopback('POST', '/api/v1/auth/logout', replayHeaders)).status, 401, 'a replay cannot sign the device out');
  assert.deepEqual((await call(page, 'GET', '/auth/check')).body, { authenticated: true, method: 'cookie' });
  assert.equal((await helper.api('GET', '/api/v1/tasks')).tasks.length, 1, 'no refused request made a task');

  // Past its step-up window (from its approval), a grant needs a fresh sign-in.
  await new Promise((r) => setTimeout(r, Math.max(0, approvedAt + STEP_UP_MS + 500 - Date.now())));
  const grant = await call(page, 'POST', '/tasks', { description: 'Reach my NAS', allowHosts: ['192.168.1.10'] });
  assert.equal(grant.status, 403);
  assert.equal(grant.body.error.code, 'step_up_required');
  assert.match(grant.body.error.message, /paired device/);
  const plain = await call(page, 'POST', '/tasks', { description: 'Tidy up again [[paired]]' });
  assert.equal(plain.status, 201, 'a task within Settings still starts');

  // Revoked from the CLI: refused at once.
  const ls = await cli('devices', 'ls', '--json');
  const { devices } = JSON.parse(ls.stdout);
  assert.equal(devices.length, 1);
  assert.equal((await cli('devices', 'rm', devices[0].id)).code, 0);
  assert.equal((await call(page, 'GET', '/tasks')).status, 401);
  assert.deepEqual((await call(page, 'GET', '/auth/check')).body, { authenticated: false });

  for (const id of [made.body.id, plain.body.id]) {
    await helper.waitTask(id, 'its end', (t) => ['completed', 'failed'].includes(t.status), 120000);
  }
  await page.context().close();
});

test('a denied code and an expired code get no session', { timeout: 180000 }, async () => {
  await cli('version');
  const page = await devicePage();
  const denied = await askForCode(page);
  const deny = await cli('devices', 'deny', denied.code);
  assert.equal(deny.code, 0, deny.stderr);
  assert.deepEqual((await poll(page, denied)).body, { status: 'rejected' });
  assert.notEqual((await cli('devices', 'approve', denied.code)).code, 0, 'a denied code cannot be approved');
  assert.equal((await poll(page, denied)).body.status, 'rejected');

  const late = await askForCode(page);
  await new Promise((r) => setTimeout(r, TTL_MS + 500));
  assert.deepEqual((await poll(page, late)).body, { status: 'expired' });
  const tooLate = await cli('devices', 'approve', late.code);
  assert.notEqual(tooLate.code, 0);
  assert.match(tooLate.stderr, /expired/);
  assert.equal(await sessionCookie(page), undefined, 'no cookie was set');
  assert.equal((await call(page, 'GET', '/tasks')).status, 401);
  await page.context().close();
});

test('the dashboard shows a device asking, notifies it, approves it; Settings revokes it', { timeout: 120000 }, async () => {
  const { helper } = env;
  const dash = await env.page(null, { permissions: ['notifications'] });
  await recordNotifications(dash);
  await dash.goto(`${helper.base}/`);
  await dash.waitForSelector('#attention-empty:not([hidden])');

  const device = await devicePage();
  const p = await askForCode(device);
  const code = `${p.code.slice(0, 3)} ${p.code.slice(3)}`;
  const item = dash.locator(`#attention-list li[data-pairing="${p.code}"]`);
  await item.waitFor();
  assert.match(await item.textContent(), new RegExp(`Chrome on Linux asks to pair${code}asked at .* from ${ipRe} · .*HeadlessChrome/`));
  assert.equal(await dash.isHidden('#attention-empty'), true);
  const notes = await eventually('a notification of the device', async () => {
    const shown = await dash.evaluate(() => window.shownNotes);
    return shown.some((n) => n.title === 'Chrome on Linux asks to pair') && shown;
  });
  assert.match(notes.find((n) => n.title === 'Chrome on Linux asks to pair').body, new RegExp(`Code ${code}, from ${ipRe}\\. Approve it only if the device shows this code`));

  // A fresh sign-in (another tab) so that the page may approve: approving
  // makes a session, and needs step-up.
  const fresh = watch(await dash.context().newPage());
  await signIn(fresh, helper, '/');
  await fresh.close();
  await item.locator('button', { hasText: 'Approve' }).click();
  await dash.locator('.toast', { hasText: 'Approved Chrome on Linux' }).waitFor();
  await item.waitFor({ state: 'detached' });
  assert.deepEqual((await poll(device, p)).body, { status: 'approved', deviceName: 'Chrome on Linux' });
  assert.equal((await call(device, 'GET', '/tasks')).status, 200);

  await dash.goto(`${helper.base}/settings#devices`);
  const row = dash.locator('#device-rows tr[data-device]');
  await row.waitFor();
  assert.match(await row.textContent(), new RegExp(`^Chrome on Linux${ipRe}.*HeadlessChrome/`));
  dash.once('dialog', (d) => d.accept());
  await row.locator('button', { hasText: 'Revoke' }).click();
  await dash.locator('.toast', { hasText: 'Revoked Chrome on Linux' }).waitFor();
  await dash.locator('#device-rows', { hasText: 'No paired devices.' }).waitFor();
  assert.equal((await call(device, 'GET', '/tasks')).status, 401);
  await device.context().close();
  await env.done(dash);
});
