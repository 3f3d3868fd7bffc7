// Copies the repository's samples beside their committed grammar snapshots, so that the
// snapshot test colours the samples as they are now (the copies are not committed). The
// snapshot tool writes a missing snapshot and passes, so a sample without one fails here,
// unless `--update` asks for new snapshots.
import * as fs from 'node:fs';
import * as path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const samples = path.resolve(here, '../../../samples');
const into = path.join(here, 'samples');
const update = process.argv.includes('--update');
fs.mkdirSync(into, { recursive: true });
const missing = [];
for (const name of fs.readdirSync(samples).filter((n) => n.endsWith('.weft'))) {
  fs.copyFileSync(path.join(samples, name), path.join(into, name));
  if (!fs.existsSync(path.join(into, `${name}.snap`))) missing.push(name);
}
for (const name of ['tricky.weft', 'kernel.wgsl']) {
  if (!fs.existsSync(path.join(here, `${name}.snap`))) missing.push(name);
}
if (missing.length > 0 && !update) {
  console.error(`no grammar snapshot for ${missing.join(', ')}: run \`npm run test:grammar:update\` and review the new .snap files`);
  process.exit(1);
}
