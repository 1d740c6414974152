// CommonJS: require() of the ESM packages (Node ^20.19 / >=22.12 load them without a flag).
// Usage: node run-cjs.cjs <sqlite file>
const { DefaultRunner, defineWorkflow } = require('@orreryjs/runner');

const greet = defineWorkflow({
  name: 'greet',
  tasks: [
    { id: 'name', run: (ctx) => void ctx.set('name', 'world') },
    { id: 'say', dependsOn: ['name'], run: (ctx) => void ctx.set('greeting', `hello ${ctx.get('name')}`) },
  ],
});

async function main() {
  const runner = await DefaultRunner.create({ database: `sqlite:${process.argv[2]}`, workflows: [greet] });
  await runner.start();
  const result = await runner.execute('greet');
  await runner.shutdown();
  if (result.status !== 'completed' || result.finalContext.greeting !== 'hello world') {
    throw new Error(`expected a completed pipeline saying hello world, got ${JSON.stringify(result)}`);
  }
  process.stdout.write(`cjs: ${result.status} ${JSON.stringify(result.finalContext)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
});
