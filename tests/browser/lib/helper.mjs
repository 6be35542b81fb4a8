// A real hivecrew-helper for the browser tests: built from this tree, run
// as its own process with the sandbox VM backend on a temporary data
// directory, driven over its unix socket (as the CLI does) and opened in the
// browser through a one-time login link.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const OUT = path.join(ROOT, 'tests', 'browser', 'out');

const run = promisify(execFile);

/**
 * The folder of binaries built from this tree that `make browser` passes
 * (bin/, just built by `make build`), or null: then each test file builds
 * its own.
 */
const PREBUILT = process.env.HIVECREW_TEST_BIN ? path.resolve(process.env.HIVECREW_TEST_BIN) : null;

/**
 * Puts the binary name of package pkg into dir: hard-linked (or copied)
 * from PREBUILT when it is set, else built (env added to the build's).
 */
async function install(dir, name, pkg, env = {}) {
  const dst = path.join(dir, name);
  if (PREBUILT) {
    const src = path.join(PREBUILT, name);
    try {
      fs.linkSync(src, dst);
    } catch (err) {
      if (err.code !== 'EXDEV') throw new Error(`prebuilt ${name} ($HIVECREW_TEST_BIN): ${err.message}`);
      fs.copyFileSync(src, dst);
    }
    return;
  }
  await run('go', ['build', '-o', dst, pkg], { cwd: ROOT, env: { ...process.env, ...env } });
}

/**
 * Puts hivecrew-helper and hivecrew-guestagent into a fresh folder every
 * account can read (sandboxes run the guest agent as another user) and
 * returns it: from $HIVECREW_TEST_BIN, or built (the Go build cache makes
 * that quick after the first time, but each link takes seconds).
 */
export async function buildBinaries() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hcb-bin-'));
  fs.chmodSync(dir, 0o755);
  await install(dir, 'hivecrew-helper', './xpchelper');
  await install(dir, 'hivecrew-guestagent', './guestagent', { CGO_ENABLED: '0' });
  return dir;
}

/** Puts the CLI (hivecrew) into bin, next to the helper (as buildBinaries). */
export async function buildCLI(bin) {
  await install(bin, 'hivecrew', './app');
}

/**
 * An IPv4 address of this machine that is not loopback (the first, by
 * interface), where devices pair with the helper: pairing is refused from
 * loopback. Throws when there is none.
 */
export function networkIP() {
  for (const addrs of Object.values(os.networkInterfaces())) {
    const a = addrs.find((x) => x.family === 'IPv4' && !x.internal && !x.address.startsWith('169.254.'));
    if (a) return a.address;
  }
  throw new Error('this machine has no IPv4 address but loopback: devices pair through the helper\'s network address');
}

/** A running helper. */
export class Helper {
  /**
   * Starts the helper from bin, listening on listen, and waits for its
   * banner. name labels its log under out/logs. A helper listening on
   * every address (0.0.0.0 or [::]) is reached through loopback (addr,
   * base).
   */
  static async start(bin, name, args = [], listen = '127.0.0.1:0') {
    const h = new Helper();
    h.name = name;
    h.home = fs.mkdtempSync('/tmp/hcb-'); // short: unix socket paths are limited
    // The user's home is not in the helper's data folder: an output folder
    // there would be refused (it is the helper's).
    h.userHome = fs.mkdtempSync('/tmp/hcu-');
    h.outputDir = path.join(h.userHome, 'Downloads', 'Hivecrew');
    fs.mkdirSync(path.join(OUT, 'logs'), { recursive: true });
    h.logPath = path.join(OUT, 'logs', `${name}-helper.log`);
    const log = fs.openSync(h.logPath, 'w');
    h.proc = spawn(path.join(bin, 'hivecrew-helper'), ['serve', '--home', h.home, '--addr', listen, '--print-api-key', ...args], {
      env: { ...process.env, HOME: h.userHome, XDG_DATA_HOME: path.join(h.userHome, '.local', 'share') },
      stdio: ['ignore', 'pipe', log],
    });
    h.exited = new Promise((r) => h.proc.on('exit', (code, signal) => r({ code, signal })));
    const lines = readline.createInterface({ input: h.proc.stdout });
    const banner = await new Promise((resolve, reject) => {
      const got = {};
      const timer = setTimeout(() => reject(new Error(`helper ${name} printed no banner; log: ${h.logPath}`)), 30000);
      lines.on('line', (line) => {
        let m;
        if ((m = line.match(/API:\s+http:\/\/(\S+)\/api\/v1/))) got.addr = m[1];
        if ((m = line.match(/API key:\s+(hc_\S+)/))) got.key = m[1];
        if (line.startsWith('Press Ctrl+C')) { clearTimeout(timer); resolve(got); }
      });
      h.exited.then(() => { clearTimeout(timer); reject(new Error(`helper ${name} exited at start; log: ${h.logPath}`)); });
    });
    h.proc.stdout.resume();
    h.addr = banner.addr.replace(/^(0\.0\.0\.0|\[::\]):/, '127.0.0.1:');
    h.port = Number(h.addr.slice(h.addr.lastIndexOf(':') + 1));
    h.key = banner.key;
    h.base = `http://${h.addr}`;
    return h;
  }

  /** Calls the API over the unix socket (trusted, no key); answers {status, body (parsed JSON or text)}. */
  unix(method, urlPath, body) {
    return new Promise((resolve, reject) => {
      const data = body === undefined ? null : Buffer.from(JSON.stringify(body));
      const req = http.request({ socketPath: path.join(this.home, 'helper.sock'), path: urlPath, method,
        headers: data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {} }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { text += c; });
        res.on('end', () => {
          let parsed = text;
          try { parsed = text ? JSON.parse(text) : null; } catch { /* text */ }
          resolve({ status: res.statusCode, body: parsed });
        });
      });
      req.on('error', reject);
      if (data) req.write(data);
      req.end();
    });
  }

  /** Like unix, but fails unless the status is 2xx; answers the body. */
  async api(method, urlPath, body) {
    const r = await this.unix(method, urlPath, body);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${urlPath}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /**
   * Runs the CLI of bin (buildCLI) against this helper, as its user;
   * answers {code, stdout, stderr}.
   */
  cli(bin, ...args) {
    return new Promise((resolve) => {
      const p = spawn(path.join(bin, 'hivecrew'), ['--home', this.home, ...args], {
        env: { ...process.env, HOME: this.userHome }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (c) => { stdout += c; });
      p.stderr.on('data', (c) => { stderr += c; });
      p.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** A one-time login link for the browser. */
  async loginLink() {
    const url = new URL((await this.api('POST', '/api/v1/auth/login-link')).url);
    url.host = this.addr; // the link names the address listened on: [::] when every one
    return url.href;
  }

  /** Adds the scripted provider (the default, with a default model). */
  addProvider(llm, apiKey = 'sk-scripted-test') {
    return this.api('POST', '/api/v1/providers', { displayName: 'Scripted', baseURL: llm.url, apiKey, defaultModelId: 'scripted-large', isDefault: true });
  }

  task(id) { return this.api('GET', `/api/v1/tasks/${id}`); }

  /** Polls a task until ok(task) holds; answers it. */
  async waitTask(id, what, ok, timeoutMs = 60000) {
    const end = Date.now() + timeoutMs;
    let t;
    for (;;) {
      t = await this.task(id);
      if (ok(t)) return t;
      if (Date.now() > end) throw new Error(`task ${id}: timed out waiting for ${what}; it is ${t.status} (${t.statusReason || ''}): ${JSON.stringify(t).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** Stops the helper (SIGTERM, then SIGKILL) and removes its data. */
  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGTERM');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 30000);
      await this.exited;
      clearTimeout(t);
    }
    fs.rmSync(this.home, { recursive: true, force: true });
    fs.rmSync(this.userHome, { recursive: true, force: true });
  }
}

export const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'timedOut', 'maxIterations', 'planFailed']);
