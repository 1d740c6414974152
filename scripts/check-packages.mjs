#!/usr/bin/env node
// Installs the packages as a stranger would and uses them: builds, `npm pack`s every workspace
// package, installs the tarballs into a fresh app in a temporary folder (their dependencies
// come from the npm registry), then checks there that
//   1. a SQLite-only install (@orreryjs/runner without @orreryjs/postgres-adapter) has no `pg`,
//      runs a workflow from ESM and from CommonJS, and answers a postgres:// URL with a
//      ConfigurationError naming the package to install;
//   2. with every package installed, each one loads through import() and require(), the
//      `orrery` command runs, and `tsc` (strict, skipLibCheck false) accepts their types under
//      moduleResolution nodenext (ESM and CommonJS), node16 (ESM), bundler, and node10.
// Usage: npm run check:packages   (KEEP_PACKAGE_CHECK=1 keeps the temporary folder)
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = join(root, 'scripts', 'package-check');
/** The TypeScript the repository builds with, and the last release with moduleResolution node10. */
const TYPESCRIPT = '7.0.2';
const TYPESCRIPT_NODE10 = '5.9.3';
const typesNode = JSON.parse(readFileSync(join(root, 'node_modules/@types/node/package.json'), 'utf8')).version;
const startedAt = Date.now();

const log = (message) =>
  process.stdout.write(`[check:packages ${((Date.now() - startedAt) / 1000).toFixed(0)}s] ${message}\n`);

/** Runs a command; fails the check (with its output) unless it exits 0. Returns its stdout. */
function run(command, args, { cwd = root, quietStderr = false } = {}) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${result.status ?? result.signal}\n${result.stdout}\n${result.stderr}`,
    );
  }
  if (!quietStderr && result.stderr.trim() !== '') {
    throw new Error(`${command} ${args.join(' ')} wrote to stderr (a warning?):\n${result.stderr}`);
  }
  return result.stdout;
}

/** Runs `node script` in the app: it must exit 0 and print nothing on stderr (no warnings). */
function node(app, script, ...args) {
  const out = run(process.execPath, [script, ...args], { cwd: app });
  for (const line of out.trimEnd().split('\n')) log(`  ${line}`);
}

function npmInstall(app, specs) {
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs], {
    cwd: app,
    quietStderr: true,
  });
}

/** Every installed package named `name`, at any depth. */
function findInstalled(dir, name, found = []) {
  const modules = join(dir, 'node_modules');
  if (!existsSync(modules)) return found;
  for (const entry of readdirSync(modules)) {
    const scoped = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((e) => `${entry}/${e}`) : [entry];
    for (const pkg of scoped) {
      if (pkg === name) found.push(join(modules, pkg));
      findInstalled(join(modules, pkg), name, found);
    }
  }
  return found;
}

function tsc(app, bin, label, compilerOptions, files) {
  const config = `tsconfig.${label.replace(/\W+/g, '-')}.json`;
  // TypeScript 6+ includes no @types package unless `types` names it; a Node project names `node`.
  const options = {
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    target: 'es2022',
    types: ['node'],
    ...compilerOptions,
  };
  writeFileSync(join(app, config), JSON.stringify({ compilerOptions: options, files }, null, 2));
  run(process.execPath, [join(app, 'node_modules', bin, 'bin', 'tsc'), '-p', config], { cwd: app });
  log(`  tsc ${label}: ok`);
}

function checkTarball({ name, filename, files }) {
  const paths = new Set(files.map((f) => f.path));
  const required = ['package.json', 'LICENSE', 'README.md', 'dist/index.js', 'dist/index.d.ts'];
  if (name.endsWith('-adapter')) required.push('drizzle/meta/_journal.json');
  if (name === '@orreryjs/cli') required.push('bin/orrery.js');
  const missing = required.filter((p) => !paths.has(p));
  const stray = [...paths].filter((p) => /^(src|test)\//.test(p) || p.endsWith('.tsbuildinfo'));
  if (missing.length > 0 || stray.length > 0) {
    throw new Error(`${filename}: missing [${missing.join(', ')}], should not contain [${stray.join(', ')}]`);
  }
  const manifest = JSON.parse(readFileSync(join(root, 'packages', name.split('/')[1], 'package.json'), 'utf8'));
  if (manifest.license !== 'MIT' || !manifest.engines?.node) throw new Error(`${name}: no license or engines field`);
}

const work = mkdtempSync(join(tmpdir(), 'orrery-package-check-'));
let passed = false;
try {
  log(`building (tsc -b); working in ${work}`);
  run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: root });

  log('packing every workspace package');
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  const packed = JSON.parse(
    run('npm', ['pack', '--workspaces', '--json', '--loglevel=error', '--pack-destination', tarballs], {
      quietStderr: true,
    }),
  );
  const tarball = {};
  for (const entry of packed) {
    checkTarball(entry);
    tarball[entry.name.split('/')[1]] = join(tarballs, entry.filename);
    log(`  ${entry.filename}: ${entry.entryCount} files, ${(entry.size / 1024).toFixed(0)} kB`);
  }

  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', private: true })}\n`);
  for (const file of readdirSync(fixtures)) copyFileSync(join(fixtures, file), join(app, file));

  log('installing @orreryjs/runner alone (SQLite only); builds better-sqlite3');
  npmInstall(
    app,
    ['core', 'cron', 'sqlite-adapter', 'runner'].map((p) => tarball[p]),
  );
  const unwanted = [...findInstalled(app, 'pg'), ...findInstalled(app, '@orreryjs/postgres-adapter')];
  if (unwanted.length > 0) throw new Error(`a SQLite-only install contains ${unwanted.join(', ')}`);
  log('  no pg and no @orreryjs/postgres-adapter in node_modules');
  node(app, 'run-esm.mjs', join(work, 'esm.db'));
  node(app, 'run-cjs.cjs', join(work, 'cjs.db'));
  node(app, 'missing-adapter.mjs');

  log(
    `installing the rest: postgres-adapter, dashboard, cli, typescript ${TYPESCRIPT} and ${TYPESCRIPT_NODE10}, @types/node`,
  );
  npmInstall(app, [
    tarball['postgres-adapter'],
    tarball.dashboard,
    tarball.cli,
    `typescript@${TYPESCRIPT}`,
    `typescript-node10@npm:typescript@${TYPESCRIPT_NODE10}`,
    `@types/node@${typesNode}`,
  ]);
  if (findInstalled(app, 'pg').length === 0) throw new Error('pg is missing beside @orreryjs/postgres-adapter');
  log('every package through require() and import():');
  node(app, 'require-all.cjs');
  const version = run(process.execPath, [join(app, 'node_modules/.bin/orrery'), '--version'], { cwd: app }).trim();
  log(`  orrery --version: ${version}`);

  log('type-checking (strict, skipLibCheck false)');
  tsc(app, 'typescript', 'nodenext ESM+CJS', { module: 'nodenext', lib: ['es2023'] }, ['types.mts', 'types.cts']);
  tsc(app, 'typescript', 'node16 ESM', { module: 'node16' }, ['types.mts']);
  tsc(app, 'typescript', 'bundler', { module: 'preserve', moduleResolution: 'bundler' }, ['types.mts']);
  copyFileSync(join(app, 'types.cts'), join(app, 'types-node10.ts'));
  tsc(
    app,
    'typescript-node10',
    'node10 CJS (TypeScript 5.9)',
    { module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true },
    ['types-node10.ts'],
  );
  passed = true;
  log('all package checks passed');
} finally {
  if (passed && !process.env.KEEP_PACKAGE_CHECK) rmSync(work, { recursive: true, force: true });
  else log(`left ${work} for inspection`);
}
