// Screenshots of the built book's main pages in headless Chromium, and the check that the first
// page reaches every runtime's quickstart in one click. Run by scripts/test-docs.sh.
// Usage: node book_screenshots.mjs BOOK_DIR OUT_DIR   (env TOOLS_NODE: where playwright-core is
// installed; needs Debian's /usr/bin/chromium, which test-docs.sh installs when missing)
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';

const [bookDir, outDir] = process.argv.slice(2);
const require = createRequire(join(process.env.TOOLS_NODE, 'package.json'));
const { chromium } = require('playwright-core');

// The runtimes a reader comes for: the guide each first-page link must reach, and the language
// of the quickstart's first code block there.
const QUICKSTARTS = [
  ['guides/rust.html', 'rust'],
  ['guides/js-node.html', 'js'],
  ['guides/js-browser.html', 'js'],
  ['guides/python.html', 'python'],
  ['guides/python-asyncio.html', 'python'],
  ['guides/c.html', 'c'],
];
const SHOTS = [
  ['index', 'index.html'],
  ['concepts-leases', 'concepts/leases.html'],
  ['concepts-time', 'concepts/time.html'],
  ['concepts-fencing', 'concepts/fencing.html'],
  ['concepts-landlord-and-holder', 'concepts/landlord-and-holder.html'],
  ['guide-python', 'guides/python.html#quickstart'],
  ['benchmarks', 'benchmarks/e2e.html'],
  ['paper', 'paper.html'],
  ['api', 'reference/api.html'],
  ['api-rust', 'api/rust/leasehold/index.html'],
  ['api-js', 'api/js/modules/leasehold.html'],
  ['api-python', 'api/python/leasehold.html'],
];

const types = { '.html': 'text/html', '.css': 'text/css', '.js': 'text/javascript', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.json': 'application/json', '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf' };
// A static server on loopback (file:// would do for the pages, but not for the search index).
const server = createServer(async (req, res) => {
  try {
    let path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    let file = join(bookDir, path);
    if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(await readFile(file));
  } catch {
    res.writeHead(404);
    res.end('not found');
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const base = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
let passed = 0;
let failed = 0;
const ok = (what) => { passed++; console.log(`  ok    ${what}`); };
const bad = (what) => { failed++; console.log(`  FAILED ${what}`); };
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  for (const [name, path] of SHOTS) {
    errors.length = 0;
    const res = await page.goto(base + path, { waitUntil: 'load' });
    if (!res || !res.ok()) { bad(`${path}: HTTP ${res && res.status()}`); continue; }
    // Every image of the page has loaded and has a size (an SVG that does not parse has none).
    const broken = await page.evaluate(() => [...document.images].filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.src));
    await page.screenshot({ path: join(outDir, `${name}.png`) });
    // Each picture of the book's own pages, as the browser draws it (diagrams are looked at).
    if (!path.startsWith('api/')) {
      const imgs = page.locator('main img:visible'); // (mdbook keeps a hidden copy of each for zooming)
      for (let i = 0; i < (await imgs.count()); i++) {
        await imgs.nth(i).screenshot({ path: join(outDir, `${name}-img${i + 1}.png`) });
      }
    }
    if (broken.length) bad(`${path}: images that did not load: ${broken.join(', ')}`);
    else if (errors.length) bad(`${path}: script errors: ${errors.join('; ')}`);
    else ok(`${path}: ${outDir}/${name}.png`);
  }
  // One click from the first page to each runtime's quickstart.
  for (const [guide, lang] of QUICKSTARTS) {
    await page.goto(base + 'index.html', { waitUntil: 'load' });
    const link = page.locator(`main a[href="${guide}#quickstart"]`).first();
    if ((await link.count()) === 0) { bad(`index.html has no link to ${guide}#quickstart in its text`); continue; }
    const text = (await link.innerText()).trim();
    await Promise.all([page.waitForURL(`**/${guide}#quickstart`), link.click()]);
    const found = await page.evaluate((lang) => {
      const h = document.getElementById('quickstart');
      if (!h) return 'no #quickstart heading';
      const r = h.getBoundingClientRect();
      if (r.top < -1 || r.top > window.innerHeight) return `#quickstart heading out of view (top ${r.top})`;
      // The first code block after the heading is in the runtime's language.
      let el = h.closest('h2, h3') ?? h;
      while ((el = el.nextElementSibling)) {
        const code = el.querySelector('code[class*="language-"]');
        if (code) return code.className.includes(`language-${lang}`) ? '' : `first code block is ${code.className}`;
      }
      return 'no code block after the quickstart heading';
    }, lang);
    if (found) bad(`index.html -> "${text}" -> ${guide}: ${found}`);
    else ok(`index.html -> "${text}" -> ${guide}#quickstart, a ${lang} block in view`);
  }
  await page.goto(base + 'index.html', { waitUntil: 'load' });
  await page.screenshot({ path: join(outDir, 'index-full.png'), fullPage: true });
} finally {
  await browser.close();
  server.close();
}
console.log(`screenshots: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
