// Templates to share and developer VMs in the browser: an archive made by
// GNU tar and zstd (not by Hivecrew) imports through Settings, its
// outdated guest agent is updated with a click (the helper's own agent
// binary lands in the template), Export downloads an archive that
// imports again, a hostile archive is refused with its reason and leaves
// nothing; a developer VM of the host template opens on its own page,
// streams the sandbox guest's screen, takes a click with no takeover, and
// Remove frees its slot.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { eventually, suite } from './lib/suite.mjs';

const env = suite('templates', { provider: false });

const sha = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** Writes a template archive of a tiny root filesystem with tar and zstd; extra entries go into disk.tar. */
function makeArchive(dir, name, { hostile = false } = {}) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-tmpl-'));
  fs.mkdirSync(path.join(work, 'rootfs/usr/local/bin'), { recursive: true });
  fs.writeFileSync(path.join(work, 'rootfs/usr/local/bin/hivecrew-guestagent'), '#!/bin/sh\necho hivecrew-guestagent v0.0.1\n', { mode: 0o755 });
  fs.writeFileSync(path.join(work, 'rootfs/hello.txt'), 'hello from an archive\n');
  const members = ['rootfs'];
  if (hostile) {
    fs.symlinkSync('/etc', path.join(work, 'rootfs/etc'));
    fs.mkdirSync(path.join(work, 'evil/etc'), { recursive: true });
    fs.writeFileSync(path.join(work, 'evil/etc/pwned'), 'pwned\n');
  }
  execFileSync('tar', ['-cf', 'disk.tar', '--owner=0', '--group=0', ...members], { cwd: work });
  if (hostile) {
    // rootfs/etc is a link; then a file through it.
    execFileSync('tar', ['-rf', 'disk.tar', '--owner=0', '--group=0', '--transform', 's,^evil/etc/pwned,rootfs/etc/pwned,', 'evil/etc/pwned'], { cwd: work });
  }
  const diskBytes = fs.statSync(path.join(work, 'disk.tar')).size;
  fs.writeFileSync(path.join(work, 'manifest.json'), JSON.stringify({ format: 1, name, os: 'linux', kind: 'rootfs', agentVersion: 'v0.0.1',
    agentPath: '/usr/local/bin/hivecrew-guestagent', exportedAt: '2026-01-01T00:00:00Z', diskBytes }));
  fs.writeFileSync(path.join(work, 'SHA256SUMS'), `${sha(path.join(work, 'manifest.json'))}  manifest.json\n${sha(path.join(work, 'disk.tar'))}  disk.tar\n`);
  const out = path.join(dir, `${name.replace(/\W+/g, '-')}.hivecrew-template`);
  execFileSync('tar', ['--zstd', '-cf', out, '--owner=0', '--group=0', 'manifest.json', 'disk.tar', 'SHA256SUMS'], { cwd: work });
  fs.rmSync(work, { recursive: true, force: true });
  return out;
}

test('import, update agent and export in Settings', { timeout: 120000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-arch-'));
  const page = await env.page('/settings#templates');
  await page.waitForSelector('[data-template-row="host"]');

  await page.setInputFiles('#template-file', makeArchive(dir, 'Shared desk'));
  await page.click('#template-import-button');
  await page.waitForSelector('[data-template-row="shared-desk"]');
  assert.equal(await page.textContent('[data-template-agent="shared-desk"]'), 'v0.0.1 (outdated)');
  const tmplDir = path.join(env.helper.home, 'Templates', 'shared-desk');
  assert.equal(fs.readFileSync(path.join(tmplDir, 'rootfs/hello.txt'), 'utf8'), 'hello from an archive\n');

  // A hostile archive: refused with its reason, nothing left behind.
  await page.setInputFiles('#template-file', makeArchive(dir, 'Evil desk', { hostile: true }));
  await page.click('#template-import-button');
  await eventually('the refusal', async () => /goes through the symbolic link/.test(await page.textContent('#toasts')));
  assert.deepEqual(fs.readdirSync(path.join(env.helper.home, 'Templates')).sort(), ['shared-desk']);
  assert.equal(await page.$('[data-template-row="evil-desk"]'), null);
  page.problems.length = 0; // the refusal's toast is the expected error

  await page.click('[data-template-update="shared-desk"]');
  await eventually('the updated agent', async () => !/outdated/.test(await page.textContent('[data-template-agent="shared-desk"]')));
  assert.equal(sha(path.join(tmplDir, 'rootfs/usr/local/bin/hivecrew-guestagent')), sha(path.join(env.bin, 'hivecrew-guestagent')));
  assert.equal(await page.$('[data-template-update="shared-desk"]'), null);

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-template-export="shared-desk"]')]);
  const saved = path.join(dir, 'exported.hivecrew-template');
  await download.saveAs(saved);
  assert.equal(download.suggestedFilename(), 'shared-desk.hivecrew-template');
  await page.fill('#template-import-name', 'Round trip');
  await page.setInputFiles('#template-file', saved);
  await page.click('#template-import-button');
  await page.waitForSelector('[data-template-row="round-trip"]');
  assert.equal(fs.readFileSync(path.join(env.helper.home, 'Templates/round-trip/rootfs/hello.txt'), 'utf8'), 'hello from an archive\n');
  await env.done(page);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a developer VM: its own page, the live screen, a click with no takeover, Remove', { timeout: 120000 }, async () => {
  const page = await env.page('/settings#templates');
  await page.waitForSelector('[data-template-open="host"]');
  await page.click('[data-template-open="host"]');
  await page.waitForURL(/\/vms\/[^/]+$/);
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop());
  await eventually('the live screen', () => page.evaluate(() => { const i = document.querySelector('#live'); return !i.hidden && i.naturalWidth > 0; }));
  const vms = await env.helper.api('GET', '/api/v1/vms');
  const v = vms.vms.find((x) => x.id === id);
  assert.ok(v && v.developer && v.state === 'busy' && !v.taskId, JSON.stringify(vms));

  const box = await page.locator('#live').boundingBox();
  const [resp] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/api/v1/vms/${id}/input`) && r.request().method() === 'POST' &&
      JSON.parse(r.request().postData()).type === 'click'),
    page.mouse.click(box.x + box.width / 2, box.y + box.height / 2),
  ]);
  assert.equal(resp.status(), 204);
  const sent = JSON.parse(resp.request().postData());
  assert.equal(sent.type, 'click');
  assert.ok(Math.abs(sent.x - v.screenWidth / 2) <= 2 && Math.abs(sent.y - v.screenHeight / 2) <= 2, JSON.stringify({ sent, v }));

  await page.goto(env.helper.base + '/environments');
  await page.waitForSelector(`[data-vm-view="${id}"]`);
  await page.click(`[data-vm-view="${id}"]`);
  await page.waitForURL(new RegExp(`/vms/${id}$`));
  page.once('dialog', (d) => d.accept());
  await page.click('#vm-remove');
  await page.waitForURL(/\/environments$/);
  await eventually('the VM gone', async () => !(await env.helper.api('GET', '/api/v1/vms')).vms.some((x) => x.id === id));
  await env.done(page);
});
