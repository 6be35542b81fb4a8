// Debian's Chromium, headless, driven by playwright-core; and the checks
// every page gets: no uncaught script error and no Content Security Policy
// violation.
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { OUT } from './helper.mjs';

export const CHROMIUM = process.env.HIVECREW_CHROMIUM || '/usr/bin/chromium';

export function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--disable-gpu', '--no-first-run'] });
}

/**
 * Opens a page in a new context. Problems (uncaught errors, CSP
 * violations, console errors other than failed resource loads) are
 * collected in page.problems; assertNoProblems fails on any.
 */
export async function openPage(browser, { viewport = { width: 1280, height: 800 }, colorScheme = 'light', userAgent, permissions = [] } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, acceptDownloads: true, permissions, ...(userAgent ? { userAgent } : {}) });
  const page = watch(await context.newPage());
  page.setDefaultTimeout(20000);
  return page;
}

/** Collects a page's problems (a page opened by another one, say) in page.problems. */
export function watch(page) {
  page.problems = [];
  page.on('pageerror', (err) => page.problems.push(`uncaught: ${err.message}`));
  page.on('console', (msg) => {
    const text = msg.text();
    if (/Content Security Policy|Refused to/i.test(text)) page.problems.push(`CSP: ${text}`);
    else if (msg.type() === 'error' && !/Failed to load resource/.test(text)) page.problems.push(`console: ${text}`);
  });
  return page;
}

/** Fails if the page reported a problem. */
export function assertNoProblems(page) {
  if (page.problems.length) throw new Error(`page problems:\n${page.problems.join('\n')}`);
}

/** Signs the page in with a one-time login link from the helper. */
export async function signIn(page, helper, next) {
  const url = await helper.loginLink();
  if (!next) {
    await page.goto(url);
    return;
  }
  // The link lands on next itself (its next parameter), not on the
  // dashboard first: with no provider the dashboard sends itself to
  // /welcome once its data arrives, which could land after a navigation to
  // next had begun. The link's landing drops next's fragment: load next
  // whole with it (a change of fragment alone reloads nothing).
  const [path, hash] = next.split('#');
  await page.goto(`${url}&next=${encodeURIComponent(path)}`);
  if (hash !== undefined) {
    await page.goto(helper.base + next);
    await page.reload();
  }
}

/**
 * Records what the page shows as notifications in window.shownNotes
 * ({title, body}), from its next load on: headless Chromium shows none.
 */
export function recordNotifications(page) {
  return page.addInitScript(() => {
    const Real = window.Notification;
    window.shownNotes = [];
    window.Notification = class extends Real {
      constructor(title, opts) {
        super(title, opts);
        window.shownNotes.push({ title, body: opts?.body || '' });
      }
    };
  });
}

/** Saves a screenshot under out/screens. */
export async function shot(page, name) {
  const dir = path.join(OUT, 'screens');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}
