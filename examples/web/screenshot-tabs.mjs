// Takes the screenshot of the tabs demo in docs/: four tabs elect a leader; the first leader's
// tab is closed (its lease is cancelled), the second leader is blocked past its lease (its lease
// expires), a third tab leads; the new leader's page is captured with the landlord's timeline.
//
// Usage (from a directory where playwright-core is installed, with the package built):
//   node examples/web/screenshot-tabs.mjs [out.png]     (default docs/tabs-demo.png)
// Needs Debian's /usr/bin/chromium (scripts/test-wasm.sh installs it). The tabs test calls
// screenshotTabs() too, so this script keeps working.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs the scenario and writes the PNG to `out`; `chromium` is playwright-core's. */
export async function screenshotTabs({ chromium, out, pkgDir, executablePath = '/usr/bin/chromium' }) {
  const { startServer } = await import('./server.mjs');
  const server = await startServer({ pkgDir });
  const browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1100, height: 640 } });
    const pages = [];
    for (const label of ['tab A', 'tab B', 'tab C', 'tab D']) {
      const page = await context.newPage();
      await page.goto(`${server.url}tabs?${new URLSearchParams({ leaseMs: 2000, span: 16, label })}`);
      await page.waitForFunction(() => window.tabsDemo !== undefined);
      pages.push(page);
      await sleep(300);
    }
    const leader = async () => {
      for (;;) {
        for (const p of pages) if (!p.isClosed() && (await p.evaluate(() => window.tabsDemo.election.isLeader))) return p;
        await sleep(20);
      }
    };
    await sleep(3000);
    const first = await leader();
    await first.close(); // cancelled on pagehide: the next tab leads at once
    await sleep(3500);
    const second = await leader();
    await second.click('#freeze'); // blocks that tab past its lease: the lease expires
    await sleep(4500);
    const third = await leader();
    await sleep(2500);
    await third.screenshot({ path: out });
    // What the landlord recorded, for the caller to check: how each lease ended.
    const log = await third.evaluate(() => window.tabsDemo.election.history());
    const ends = log.entries.filter((e) => e.type === 'cancelled' || e.type === 'expired').map((e) => `${e.label} ${e.type}`);
    return { out, ends, leader: await third.evaluate(() => window.tabsDemo.label) };
  } finally {
    await browser.close();
    await server.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const require = createRequire(join(process.cwd(), 'package.json'));
  const { chromium } = require(require.resolve('playwright-core'));
  const out = resolve(process.argv[2] ?? join(here, '../../docs/tabs-demo.png'));
  const shot = await screenshotTabs({ chromium, out, pkgDir: process.env.LEASEHOLD_PKG ?? join(here, '../../bindings-wasm/pkg') });
  console.log(`wrote ${out} (${shot.ends.join(', ')}; ${shot.leader} leads)`);
}
