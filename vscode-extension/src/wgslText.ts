/** The read-only WGSL document: every kernel `weft/wgsl` gives, each under a header. */

import { KernelSource, TOP_LEVEL } from './plan';

/** A kernel's header comment: its name, the source function and the instance that runs it. */
function header(kernel: KernelSource): string {
  const owner = kernel.function === TOP_LEVEL ? 'the top level' : `def ${kernel.function}`;
  const instance = kernel.instance === kernel.function ? '' : `, run by instance ${kernel.instance}`;
  return `// ${kernel.name}: ${owner}, line ${kernel.range.start.line + 1}${instance}`;
}

/** The document's text; `title` names the file (and the function, when only one is shown). */
export function wgslDocument(title: string, kernels: KernelSource[] | null): string {
  if (kernels === null) {
    return `// ${title}: no kernels while the file has errors (the Problems panel says which).\n`;
  }
  if (kernels.length === 0) {
    return `// ${title}: no kernels (nothing here runs in parallel).\n`;
  }
  const parts = kernels.map((k) => `${header(k)}\n${k.wgsl.trimEnd()}\n`);
  const count = kernels.length === 1 ? '1 kernel' : `${kernels.length} kernels`;
  return `// ${title}: ${count}, as \`weft wgsl\` prints them.\n\n${parts.join('\n')}`;
}
