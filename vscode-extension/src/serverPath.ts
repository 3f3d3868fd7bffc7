/** Finding the `weft` binary: the `weft.server.path` setting, or `weft` on the PATH. */

import * as fs from 'fs';
import * as path from 'path';

/** The command that installs `weft` from a checkout of the Weft repository. */
export const INSTALL_COMMAND = 'cargo install --locked --path .';

function isExecutable(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) {
      return false;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The absolute path of the `weft` binary to run, or `undefined` when there is none. A setting
 * with a path separator names a file (relative ones from `base`, the workspace folder); a bare
 * name, or the empty setting (`weft`), is looked up on `searchPath` as a shell would.
 */
export function resolveServer(
  setting: string,
  searchPath: string | undefined,
  base: string | undefined,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const name = setting.trim() === '' ? 'weft' : setting.trim();
  const suffixes = platform === 'win32' ? ['', '.exe', '.cmd'] : [''];
  if (name.includes('/') || name.includes(path.sep)) {
    const file = path.isAbsolute(name) ? name : path.resolve(base ?? process.cwd(), name);
    return suffixes.map((s) => file + s).find(isExecutable);
  }
  const separator = platform === 'win32' ? ';' : ':';
  for (const dir of (searchPath ?? '').split(separator)) {
    if (dir === '') {
      continue;
    }
    const found = suffixes.map((s) => path.join(dir, name + s)).find(isExecutable);
    if (found) {
      return found;
    }
  }
  return undefined;
}

/** What the user reads when there is no `weft` to run. */
export function missingServerMessage(setting: string): string {
  const what = setting.trim() === '' ? '`weft` was not found on the PATH' : `\`${setting}\` is not an executable file`;
  return (
    `Weft: ${what}, so the language server cannot start. ` +
    `Install it from a checkout of the Weft repository with \`${INSTALL_COMMAND}\`, ` +
    'or set `weft.server.path` to the binary.'
  );
}
