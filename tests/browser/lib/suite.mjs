// One test file's world: the binaries, a real helper (sandbox backend,
// temporary data directory), the scripted provider and a browser.
import fs from 'node:fs';
import { after, before } from 'node:test';
import { assertNoProblems, launch, openPage, signIn } from './browser.mjs';
import { buildBinaries, Helper, networkIP } from './helper.mjs';
import { ScriptedLLM } from './llm.mjs';

/**
 * Registers before/after hooks that start and stop everything; the
 * returned object is filled in before the first test runs. With provider,
 * the scripted provider is added as the default. With network, the helper
 * listens on every address with remote access on: the desktop reaches it
 * through loopback (helper.base), devices through this machine's network
 * address (env.deviceBase, networkIP), as they pair; else on loopback.
 */
export function suite(name, { provider = true, helperArgs = [], network = false } = {}) {
  const env = { bin: null, helper: null, deviceBase: null, llm: null, browser: null, pages: [] };
  before(async () => {
    const [bin, llm, browser] = await Promise.all([buildBinaries(), new ScriptedLLM().start(), launch()]);
    Object.assign(env, { bin, llm, browser });
    env.helper = await Helper.start(bin, name, helperArgs, network ? '0.0.0.0:0' : undefined);
    if (network) {
      await env.helper.api('PATCH', '/api/v1/settings', { allowRemoteAccess: true });
      env.deviceBase = `http://${networkIP()}:${env.helper.port}`;
    }
    if (provider) await env.helper.addProvider(llm);
  });
  after(async () => {
    for (const p of env.pages) await p.context().close().catch(() => {});
    await env.browser?.close();
    await env.helper?.stop();
    await env.llm?.close();
    if (env.bin) fs.rmSync(env.bin, { recursive: true, force: true });
  });
  /** A new signed-in page (its own context), at path if given. */
  env.page = async (path, opts) => {
    const page = await openPage(env.browser, opts);
    env.pages.push(page);
    await signIn(page, env.helper, path || undefined);
    return page;
  };
  /** Closes a page after checking it reported no problem. */
  env.done = async (page) => {
    assertNoProblems(page);
    await page.context().close();
    env.pages = env.pages.filter((p) => p !== page);
  };
  return env;
}

/** Polls fn until it returns a truthy value; answers it. */
export async function eventually(what, fn, timeoutMs = 30000, everyMs = 100) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
