// Copies the repository's samples beside their committed grammar snapshots, so that the
// snapshot test colours the samples as they are now (the copies are not committed).
import * as fs from 'node:fs';
import * as path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const samples = path.resolve(here, '../../../samples');
const into = path.join(here, 'samples');
fs.mkdirSync(into, { recursive: true });
for (const name of fs.readdirSync(samples).filter((n) => n.endsWith('.weft'))) {
  fs.copyFileSync(path.join(samples, name), path.join(into, name));
}
