// The packaged extension in real VS Code (code-server) in headless Chromium, used as a person
// would: open a file, read the squiggle, the Problems panel, the inlay hints, a hover, the
// code lens, the fusion view and the WGSL document. Each step saves a screenshot under
// test/e2e/artifacts/. Run by scripts/vscode-e2e, which installs what it needs.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium } from 'playwright-core';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
for (const need of ['code-server', 'vsix', 'weft', 'samples']) {
  if (!args[need]) throw new Error(`--${need} is required`);
}
const here = path.dirname(new URL(import.meta.url).pathname);
const artifacts = path.join(here, 'artifacts');
fs.rmSync(artifacts, { recursive: true, force: true });
fs.mkdirSync(artifacts, { recursive: true });

// A workspace with the quicksort sample and a small file whose hints and hovers are known.
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-e2e-'));
const workspace = path.join(work, 'workspace');
const userData = path.join(work, 'user-data');
const extensions = path.join(work, 'extensions');
fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
fs.copyFileSync(path.join(args.samples, 'quicksort.weft'), path.join(workspace, 'quicksort.weft'));
const DEMO = [
  '# Squares, summed: one map and one reduction, fused into one kernel.',
  'xs = [1.0, 2.0, 3.0, 4.0]',
  'squares = [x * x for x in xs]',
  'print(sum(squares))',
  '',
].join('\n');
fs.writeFileSync(path.join(workspace, 'demo.weft'), DEMO);
const settings = {
  'weft.server.path': args.weft,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'security.workspace.trust.enabled': false,
  'editor.inlayHints.enabled': 'on',
  'editor.codeLens': true,
  'editor.hover.delay': 100,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'window.commandCenter': false,
  'chat.disableAIFeatures': true,
  // The DOM renderer, so that a terminal's text can be read from the page.
  'terminal.integrated.gpuAcceleration': 'off',
  // The protocol's messages in the server's log, which is kept with the screenshots.
  'weft.trace.server': 'verbose',
};
fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));

const codeServerArgs = ['--user-data-dir', userData, '--extensions-dir', extensions];
const install = spawnSync(args['code-server'], [...codeServerArgs, '--install-extension', args.vsix], { encoding: 'utf8' });
if (install.status !== 0 || !/successfully installed/i.test(install.stdout + install.stderr)) {
  throw new Error(`installing the .vsix failed:\n${install.stdout}\n${install.stderr}`);
}
console.log(`installed ${path.basename(args.vsix)} into code-server`);

const port = await new Promise((resolve) => {
  const probe = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const serverLog = fs.openSync(path.join(artifacts, 'code-server.log'), 'w');
const server = spawn(
  args['code-server'],
  [...codeServerArgs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-workspace-trust', '--disable-update-check', '--log', 'trace', workspace],
  { stdio: ['ignore', serverLog, serverLog] },
);

const steps = [];
let page;
let browser;
async function step(name, body) {
  const started = Date.now();
  try {
    await body();
    steps.push({ name, ok: true });
    console.log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  } catch (error) {
    steps.push({ name, ok: false });
    console.log(`FAIL ${name}: ${error.message.split('\n')[0]}`);
    throw error;
  } finally {
    const file = `${String(steps.length).padStart(2, '0')}-${name.replace(/\W+/g, '-').toLowerCase()}.png`;
    await page?.screenshot({ path: path.join(artifacts, file) }).catch(() => undefined);
  }
}

/** Runs a command from the palette by its title, as a person types it. */
async function command(title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** Opens a file from the Explorer, as a person clicks it. */
async function openFile(name) {
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first().click();
  await page.locator(`.tab.active[data-resource-name="${name}"]`).first().waitFor();
  await page.locator('.monaco-editor .view-lines').first().waitFor();
}

/** Puts the cursor at 1-based `line` and `column` with Go to Line. */
async function goTo(line, column) {
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`:${line}:${column}`);
  await page.keyboard.press('Enter');
}

/** The active editor's visible text, hints included; whitespace as plain spaces (a selection shows spaces as dots). */
const editorText = async () =>
  (await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().innerText()).replace(/[\u00b7\u00a0]/g, ' ');

/** The frames of webviews whose document has `selector`. */
async function webviewWith(selector) {
  for (const frame of page.frames()) {
    const found = await frame.locator(selector).count().catch(() => 0);
    if (found > 0) return frame;
  }
  return undefined;
}

async function poll(what, check, timeout = 60000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    last = await check();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

let failed = false;
try {
  await poll('code-server to listen', async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.ok, 60000);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  await step('workbench loads', async () => {
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 120000 });
    await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 60000 });
  });

  await step('inlay type and shape hints', async () => {
    await openFile('demo.weft');
    // `squares` gets its type and shape from the server: text the file does not hold.
    const text = await poll('inlay hints', async () => {
      const t = await editorText();
      return /\[f32; 4\]|\[f32/.test(t) && !DEMO.includes('[f32') ? t : null;
    });
    if (!text.includes('f32')) throw new Error(`no type hint in: ${text}`);
  });

  await step('hover shows type and shape', async () => {
    // The cursor on `squares`, then Show Hover (Ctrl+K Ctrl+I): a mouse would miss when a lens
    // arrives and moves the lines.
    const hover = page.locator('.monaco-hover-content').filter({ hasText: 'f32', visible: true }).first();
    const content = await poll('a hover with a type', async () => {
      await goTo(3, 3);
      await page.keyboard.press('Control+K');
      await page.keyboard.press('Control+I');
      return hover.innerText({ timeout: 3000 }).catch(() => null);
    });
    if (!/squares/.test(content) || !/4|len/.test(content)) throw new Error(`the hover lacks name or shape: ${content}`);
    console.log(`     hover: ${content.replace(/\s+/g, ' ').slice(0, 120)}`);
    await page.keyboard.press('Escape');
  });

  await step('code lens counts kernels', async () => {
    const lens = page.locator('.contentWidgets .codelens-decoration, .codelens-decoration').first();
    await lens.waitFor({ timeout: 60000 });
    const title = await poll('a kernel lens', async () => {
      const t = await page.locator('.codelens-decoration').allInnerTexts();
      return t.find((x) => /kernels? · view fusion/.test(x));
    });
    console.log(`     lens: ${title}`);
  });

  await step('a deliberate error gets a squiggle and a Problems entry', async () => {
    await goTo(4, 1);
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('print(undefined_name)', { delay: 10 });
    await page.locator('.monaco-editor .squiggly-error').first().waitFor({ timeout: 60000 });
    await page.keyboard.press('Control+Shift+M');
    const problem = page.locator('.markers-panel .monaco-list-row', { hasText: 'undefined_name' }).first();
    await problem.waitFor({ timeout: 30000 });
    console.log(`     problem: ${(await problem.innerText()).replace(/\s+/g, ' ')}`);
    // Undo the error: the plan comes back for the next steps.
    await page.locator('.editor-group-container.active .monaco-editor').first().click();
    await page.keyboard.press('Control+Z');
    await page.keyboard.press('Control+Z');
    await poll('the squiggle to go', async () => (await page.locator('.monaco-editor .squiggly-error').count()) === 0, 30000);
  });

  await step('fusion view draws the kernels of the function at the cursor', async () => {
    await openFile('quicksort.weft');
    // Inside `quicksort`, on `x < pivot`.
    await goTo(19, 30);
    await command('Weft: Show Fusion View');
    const frame = await poll('kernels in the fusion view', () => webviewWith('svg g.kernel'), 90000);
    const picked = await frame.locator('#function').inputValue();
    if (picked !== 'quicksort') throw new Error(`the view shows ${picked}, not quicksort`);
    const kernels = await frame.locator('svg g.kernel').count();
    const options = await frame.locator('#function option').allInnerTexts();
    console.log(`     fusion view: ${kernels} kernels of quicksort drawn; functions ${options.join(', ')}`);
    // Why adjacent ops stayed apart: dashed arrows, and the list under the graph.
    const apart = await frame.locator('#apart li').count();
    if (apart < 1 || (await frame.locator('svg g.edge.apart').count()) < 1) throw new Error('no reason shown');
    console.log(`     kept apart: ${apart} reasons, the first: ${await frame.locator('#apart li').first().innerText()}`);
    // The kernel the cursor is in is highlighted. The page is looked up again: VS Code may load
    // it anew (when it moves the panel), and the plan it then gets carries the highlight.
    const view = await poll('the cursor kernel highlighted', () => webviewWith('svg g.kernel.highlighted'), 30000);
    // Selecting another kernel highlights it, and the extension decorates its ops in the editor.
    const decorations = page.locator('.editor-group-container .monaco-editor .view-overlays .cdr');
    const before = await decorations.count();
    await view.locator('svg g.kernel:not(.highlighted)').first().click();
    await poll('the clicked kernel highlighted', async () => (await view.locator('svg g.kernel.highlighted').count()) === 1);
    await poll('its ops decorated in the editor', async () => (await decorations.count()) > before, 10000);
    // Moving the cursor onto another op highlights that op's kernel instead.
    const clicked = await view.locator('svg g.kernel.highlighted').getAttribute('data-kernel');
    await page.locator('.tab[data-resource-name="quicksort.weft"]').first().click();
    await goTo(21, 38);
    await poll('the cursor kernel highlighted', async () => {
      const now = await view.locator('svg g.kernel.highlighted').getAttribute('data-kernel').catch(() => null);
      return now !== null && now !== clicked;
    }, 10000);
  });

  await step('a kernel lens opens the fusion view on its function', async () => {
    const defLine = page.locator('.editor-group-container .view-line', { hasText: 'def is_sorted' }).first();
    await defLine.scrollIntoViewIfNeeded();
    const below = (await defLine.boundingBox()).y;
    const lenses = page.locator('.codelens-decoration a');
    let clicked = false;
    for (let i = 0; i < (await lenses.count()); i++) {
      const box = await lenses.nth(i).boundingBox();
      if (box && box.y < below && box.y > below - 30) {
        console.log(`     lens: ${await lenses.nth(i).innerText()}`);
        await lenses.nth(i).click();
        clicked = true;
        break;
      }
    }
    if (!clicked) throw new Error('no lens above `def is_sorted`');
    const frame = await poll('the view on is_sorted', async () => {
      const f = await webviewWith('#function');
      return f && (await f.locator('#function').inputValue()) === 'is_sorted' ? f : null;
    });
    await frame.locator('svg g.kernel').first().waitFor();
  });

  await step('the fusion view follows edits', async () => {
    await openFile('demo.weft');
    // The editor's title button this time (VS Code passes it the file's URI and an object).
    await page.locator('.editor-group-container.active .editor-actions .action-label.codicon-type-hierarchy').first().click();
    const frame = await poll('the top level of demo.weft', async () => {
      const f = await webviewWith('#summary');
      return f && /^2 kernels/.test(await f.locator('#summary').innerText()) ? f : null;
    });
    if ((await frame.locator('#function').inputValue()) !== 'main') throw new Error('the view is not on the top level');
    await page.locator('.tab[aria-label*="Fusion: top level (demo.weft)"]').first().waitFor();
    await goTo(4, 1);
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('print(max([x - 1.0 for x in xs if x > 2.0]))', { delay: 5 });
    const summary = await poll('a new kernel count', async () => {
      const t = await frame.locator('#summary').innerText();
      return /^2 kernels/.test(t) ? null : t;
    });
    console.log(`     after the edit: ${summary}`);
  });

  await step('WGSL document', async () => {
    await openFile('quicksort.weft');
    await command('Weft: Show WGSL');
    await poll('WGSL text', async () => /@compute/.test(await editorText()), 60000);
  });

  const terminalText = () => page.locator('.terminal-wrapper.active .xterm-rows, .terminal .xterm-rows').last().innerText().catch(() => '');

  await step('Run File runs the program in a terminal', async () => {
    await openFile('demo.weft');
    await command('Weft: Run File');
    // 1 + 4 + 9 + 16, then the largest of x - 1 over x > 2.
    await poll('the program output', async () => /30\.0\s+3\.0/.test(await terminalText()), 60000);
  });

  await step('Send Selection to REPL runs the lines in weft repl', async () => {
    await openFile('demo.weft');
    await goTo(2, 1);
    for (let i = 0; i < 3; i++) await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+Enter');
    const text = await poll('the REPL output', async () => {
      const t = await terminalText();
      return /\]> /.test(t) && /30\.0/.test(t) ? t : null;
    }, 60000);
    console.log(`     repl: ${text.replace(/\s+/g, ' ').trim().slice(0, 160)}`);
  });

  /** The settings editor, searched for `id`: the setting shown, once its title reads `title`. */
  async function settingItem(id, title) {
    await page.keyboard.press('Control+Comma');
    const search = page.locator('.settings-editor .suggest-input-container textarea, .settings-editor .suggest-input-container input').first();
    await search.waitFor();
    await search.fill(id);
    const item = page.locator('.settings-editor .setting-item-contents').filter({ hasText: title, visible: true });
    await item.waitFor();
    return item;
  }

  /** Clicks a checkbox setting, as a person unticks it in the Settings editor. */
  async function toggleSetting(id, title) {
    const item = await settingItem(id, title);
    await item.locator('.setting-value-checkbox').click();
  }

  /** Types a string setting's value in the Settings editor. */
  async function setStringSetting(id, title, value) {
    const item = await settingItem(id, title);
    const input = item.locator('input').first();
    await input.fill(value);
    await input.press('Tab');
  }

  await step('hint settings reach the server', async () => {
    await toggleSetting('weft.inlayHints.types', 'Inlay Hints: Types');
    await toggleSetting('weft.inlayHints.shapes', 'Inlay Hints: Shapes');
    await openFile('demo.weft');
    await poll('type hints to go, kernel hints to stay', async () => {
      const t = await editorText();
      return !t.includes('[f32; 4]') && t.includes('⟨k1⟩');
    });
    await toggleSetting('weft.inlayHints.types', 'Inlay Hints: Types');
    await toggleSetting('weft.inlayHints.shapes', 'Inlay Hints: Shapes');
    await openFile('demo.weft');
    await poll('type hints back', async () => (await editorText()).includes('[f32; 4]'));
  });

  await step('a missing weft is explained, and Restart Server recovers', async () => {
    await setStringSetting('weft.server.path', 'Server: Path', '/nonexistent/weft');
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'cargo install' }).first();
    await toast.waitFor({ timeout: 30000 });
    const message = (await toast.innerText()).replace(/\s+/g, ' ');
    if (!message.includes('/nonexistent/weft') || !message.includes('weft.server.path')) throw new Error(message);
    console.log(`     message: ${message.slice(0, 200)}`);
    await setStringSetting('weft.server.path', 'Server: Path', args.weft);
    await command('Weft: Restart Server');
    await openFile('demo.weft');
    await goTo(4, 1);
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('ys = xs', { delay: 5 });
    await poll('hints from the restarted server', async () => (await editorText()).includes('ys: [f32; 4]'), 60000);
  });
} catch (error) {
  failed = true;
  console.error(error.stack ?? error);
} finally {
  await browser?.close().catch(() => undefined);
  server.kill('SIGTERM');
  // VS Code's logs, the extension's output channel among them, for a failure's post-mortem.
  if (fs.existsSync(path.join(userData, 'logs'))) {
    fs.cpSync(path.join(userData, 'logs'), path.join(artifacts, 'logs'), { recursive: true });
  }
  fs.rmSync(work, { recursive: true, force: true });
}
const passed = steps.filter((s) => s.ok).length;
console.log(`${passed} of ${steps.length} steps passed; screenshots in ${path.relative(process.cwd(), artifacts)}`);
process.exit(failed ? 1 : 0);
