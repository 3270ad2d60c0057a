// The web example in headless Chromium (Debian's /usr/bin/chromium through playwright-core):
// holders in the page renew over fetch against the example's Node landlord; the test checks the
// timeline the page shows and saves a screenshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

const root = process.env.LEASEHOLD_ROOT;
const artifacts = process.env.LEASEHOLD_ARTIFACTS ?? '.';
const pkgDir = dirname(fileURLToPath(import.meta.resolve('leasehold')));

test('web example: every lease\'s timeline shows granted, renewed, expired and cancelled', { timeout: 60_000 }, async () => {
  const { startServer } = await import(pathToFileURL(join(root, 'examples/web/server.mjs')).href);
  const server = await startServer({ pkgDir });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 560 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(server.url);
    await page.waitForSelector('body[data-done="1"], body[data-error]', { timeout: 30_000 });
    assert.equal(await page.getAttribute('body', 'data-error'), null);
    assert.deepEqual(errors, []);
    const rows = await page.$$eval('#leases tr', (trs) =>
      trs.map((tr) => ({
        holder: tr.dataset.holder,
        events: tr.dataset.events.split(' '),
        state: tr.querySelector('.state').textContent,
        chips: [...tr.querySelectorAll('.chip')].map((c) => c.textContent),
      })),
    );
    const by = Object.fromEntries(rows.map((r) => [r.holder, r]));
    assert.deepEqual(Object.keys(by).sort(), ['alpha', 'bravo', 'charlie']);
    for (const r of rows) assert.equal(r.events[0], 'granted', `${r.holder} starts with granted`);
    assert.equal(by.alpha.state, 'live');
    assert.ok(by.alpha.events.filter((e) => e === 'renewed').length >= 3, `alpha renewed: ${by.alpha.events}`);
    assert.equal(by.bravo.state, 'expired');
    assert.equal(by.bravo.events.at(-1), 'expired');
    assert.ok(by.bravo.events.includes('renewed'));
    assert.equal(by.charlie.state, 'cancelled');
    assert.equal(by.charlie.events.at(-1), 'cancelled');
    assert.match(by.alpha.chips.join(' '), /renewed ×\d+/);
    // the landlord's own record agrees with what the page shows
    const expired = server.history.filter((e) => e.type === 'expired').map((e) => e.holder);
    assert.deepEqual(expired, ['bravo']);
    mkdirSync(artifacts, { recursive: true });
    const shot = join(artifacts, 'web-example.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`# screenshot: ${shot}`);

    // A second visit to the same server: its own three leases only (none of the first visit's
    // rows), and a timeline scaled from its own first event, not from the server's start.
    const firstCookies = new Set(await page.$$eval('#leases tr', (trs) => trs.map((tr) => tr.dataset.cookie)));
    const again = await browser.newPage({ viewport: { width: 1000, height: 560 } });
    again.on('pageerror', (e) => errors.push(String(e)));
    await again.goto(server.url);
    await again.waitForSelector('body[data-done="1"], body[data-error]', { timeout: 30_000 });
    assert.equal(await again.getAttribute('body', 'data-error'), null);
    const second = await again.$$eval('#leases tr', (trs) => trs.map((tr) => ({
      holder: tr.dataset.holder,
      cookie: tr.dataset.cookie,
      // where the marks sit, in % of the bar
      at: [...tr.querySelectorAll('.bar i')].map((i) => parseFloat(i.style.left)),
    })));
    assert.deepEqual(second.map((r) => r.holder).sort(), ['alpha', 'bravo', 'charlie']);
    for (const r of second) assert.ok(!firstCookies.has(r.cookie), `row ${r.holder} is from the first visit`);
    const firsts = second.map((r) => Math.min(...r.at));
    const lasts = second.map((r) => Math.max(...r.at));
    assert.ok(Math.min(...firsts) < 5, `the first lease starts at the left of the bar: ${firsts}`);
    assert.ok(Math.max(...lasts) > 50, `the visit's leases fill the bar, not a sliver: ${lasts}`);
    const shot2 = join(artifacts, 'web-example-second-visit.png');
    await again.screenshot({ path: shot2, fullPage: true });
    console.log(`# screenshot of a second visit: ${shot2} (marks from ${Math.min(...firsts).toFixed(1)}% to ${Math.max(...lasts).toFixed(1)}%)`);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.close();
  }
});
