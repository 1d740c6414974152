/**
 * The root README's TypeScript blocks are generated from the files of `examples/readme/`, which
 * are the one source. In README.md, each ```ts block is preceded by a marker naming its file:
 *
 *     <!-- example: examples/readme/server.ts -->
 *
 * and holds the file's code: the lines between `// #region readme` and `// #endregion readme`
 * (several regions are joined in order), or the whole file when it has no region. Code outside
 * the regions runs but is not shown (imports of the shared helpers, a runner that a client-only
 * snippet needs, clean-up).
 *
 *     npm run readme:examples            # rewrite README.md's blocks from the files
 *     npm run readme:examples -- --check # exit 1 when a block differs (test/readme.test.ts checks the same)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARKER = /^<!-- example: (\S+) -->$/;
const REGION_START = /^\s*\/\/ #region readme\s*$/;
const REGION_END = /^\s*\/\/ #endregion readme\s*$/;

/** One ```ts block of the README, with the file its marker names (undefined without a marker). */
export interface ReadmeBlock {
  /** The path its marker names, relative to the repository root. */
  file: string | undefined;
  /** The block's text, without fences, each line ending with a newline. */
  code: string;
  /** Line number (1-based) of its opening fence. */
  line: number;
  /** Index of the first and one past the last line of its content in the README's lines. */
  start: number;
  end: number;
}

/** The code a README block shows for an example file's text. */
export function shownCode(fileText: string): string {
  const lines = fileText.replace(/\n$/, '').split('\n');
  if (!lines.some((line) => REGION_START.test(line))) return `${lines.join('\n')}\n`;
  const shown: string[] = [];
  let inside = false;
  for (const [index, line] of lines.entries()) {
    if (REGION_START.test(line)) {
      if (inside) throw new Error(`line ${index + 1}: #region readme inside a region`);
      inside = true;
    } else if (REGION_END.test(line)) {
      if (!inside) throw new Error(`line ${index + 1}: #endregion readme without a region`);
      inside = false;
    } else if (inside) shown.push(line);
  }
  if (inside) throw new Error('#region readme without #endregion readme');
  return `${shown.join('\n')}\n`;
}

/** Every ```ts block of a Markdown text, in order. */
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (lines[index] !== '```ts') continue;
    const marker = index > 0 ? MARKER.exec(lines[index - 1]!) : null;
    const start = index + 1;
    let end = start;
    while (end < lines.length && lines[end] !== '```') end++;
    const code = lines
      .slice(start, end)
      .map((line) => `${line}\n`)
      .join('');
    blocks.push({ file: marker?.[1], code, line: index + 1, start, end });
    index = end;
  }
  return blocks;
}

/** The README with every marked block replaced by its file's code (files read relative to `root`). */
export function syncedReadme(markdown: string, root: string): string {
  const lines = markdown.split('\n');
  // From the last block up, so that the earlier blocks' line numbers stay valid.
  for (const block of readmeBlocks(markdown).reverse()) {
    if (block.file === undefined) continue;
    const code = shownCode(readFileSync(join(root, block.file), 'utf8'));
    lines.splice(block.start, block.end - block.start, ...code.replace(/\n$/, '').split('\n'));
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const path = join(root, 'README.md');
  const before = readFileSync(path, 'utf8');
  const unmarked = readmeBlocks(before).filter((block) => block.file === undefined);
  for (const block of unmarked)
    process.stderr.write(`README.md:${block.line}: a \`\`\`ts block without <!-- example: … -->\n`);
  const after = syncedReadme(before, root);
  if (process.argv.includes('--check')) {
    if (after !== before)
      process.stderr.write('README.md differs from examples/readme/: run npm run readme:examples\n');
    process.exitCode = after !== before || unmarked.length > 0 ? 1 : 0;
  } else {
    if (after !== before) writeFileSync(path, after);
    process.stdout.write(
      `${after === before ? 'README.md is up to date' : 'README.md rewritten from examples/readme/'}\n`,
    );
    if (unmarked.length > 0) process.exitCode = 1;
  }
}
