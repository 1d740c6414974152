import { expect, it } from 'vitest';
import { ConfigurationError } from '../src/index.js';
import { loadAdapter } from '../src/open-storage.js';

// A variable specifier, so that neither tsc nor the bundler resolves it ahead of time.
const importPackage = (name: string): Promise<unknown> => import(name);

it('names the package to install when an adapter package is not installed', async () => {
  const failure = loadAdapter('@orreryjs/not-installed', 'postgres://', () => importPackage('@orreryjs/not-installed'));
  await expect(failure).rejects.toBeInstanceOf(ConfigurationError);
  await expect(failure).rejects.toThrow('needs @orreryjs/not-installed, which is not installed');
  await expect(failure).rejects.toThrow('npm install @orreryjs/not-installed');
});

it('leaves any other missing module as it is', async () => {
  const failure = loadAdapter('@orreryjs/postgres-adapter', 'postgres://', () => importPackage('pg-not-installed'));
  await expect(failure).rejects.not.toBeInstanceOf(ConfigurationError);
  await expect(failure).rejects.toMatchObject({ code: 'ERR_MODULE_NOT_FOUND' });
});

it('returns the module when the adapter is installed', async () => {
  const adapter = await loadAdapter('@orreryjs/sqlite-adapter', 'sqlite:', () => import('@orreryjs/sqlite-adapter'));
  expect(typeof adapter.openSqliteStorage).toBe('function');
});
