// In an install without @orreryjs/postgres-adapter, a postgres:// URL must say what to install.
import { DefaultRunner, isOrreryError } from '@orreryjs/runner';

try {
  const runner = await DefaultRunner.create({ database: 'postgres://postgres@127.0.0.1:5432/none' });
  await runner.shutdown();
  throw new Error('DefaultRunner.create() accepted a postgres:// URL without @orreryjs/postgres-adapter installed');
} catch (error) {
  if (!isOrreryError(error, 'CONFIGURATION') || !error.message.includes('npm install @orreryjs/postgres-adapter')) {
    throw error;
  }
  process.stdout.write(`missing adapter: ${error.name}: ${error.message}\n`);
}
