/**
 * The root README's TypeScript examples must compile as written: each ```ts block is written to
 * a folder inside the repository (so that @orreryjs/* resolve as a user's install would, through
 * node_modules and the packages' exported types) and type-checked strictly with the repository's tsc.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The helpers and earlier values the README's snippets use without defining them. */
const PRELUDE = `
declare function loadRows(): Promise<number[]>;
declare function sum(values: readonly number[]): number;
declare function publish(): Promise<void>;
/** The workflow of the main example, which later snippets reuse. */
declare const nightly: import('@orreryjs/runner').Workflow;
declare const DefaultRunner: typeof import('@orreryjs/runner').DefaultRunner;
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2023'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  },
  include: ['*.ts'],
};

/** The ```ts blocks of a Markdown text, in order. */
function typeScriptBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

const tmp = join(ROOT, '.tmp');
mkdirSync(tmp, { recursive: true });
const folder = mkdtempSync(join(tmp, 'readme-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('README.md', () => {
  it('has TypeScript examples that type-check strictly', () => {
    const blocks = typeScriptBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    writeFileSync(join(folder, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    writeFileSync(join(folder, 'prelude.d.ts'), PRELUDE);
    blocks.forEach((code, index) => {
      // Each block is a module of its own (export {} for those without imports), as in a user's file.
      writeFileSync(join(folder, `block-${index + 1}.ts`), `${code}\nexport {};\n`);
    });
    const tsc = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', folder], {
      cwd: folder,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(`${tsc.stdout}${tsc.stderr}`).toBe('');
    expect(tsc.status).toBe(0);
  });
});
