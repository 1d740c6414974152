// Every package loads through require() and import(), with the same exports either way.
const names = ['core', 'cron', 'sqlite-adapter', 'postgres-adapter', 'runner', 'dashboard', 'cli'].map(
  (p) => `@orreryjs/${p}`,
);

async function main() {
  for (const name of names) {
    const required = require(name);
    const imported = await import(name);
    const keys = Object.keys(required).sort().join();
    if (keys === '' || keys !== Object.keys(imported).sort().join()) {
      throw new Error(`${name}: require() and import() disagree or export nothing`);
    }
    if (required.ConfigurationError !== undefined && required.ConfigurationError !== imported.ConfigurationError) {
      throw new Error(`${name}: require() and import() gave two copies of ConfigurationError`);
    }
    process.stdout.write(`  ${name}: ${Object.keys(required).length} exports\n`);
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
});
