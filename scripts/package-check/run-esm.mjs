// Plain ESM, as a stranger would write it after `npm install @orreryjs/runner`.
// Usage: node run-esm.mjs <sqlite file>
import { DefaultRunner, defineWorkflow } from '@orreryjs/runner';

const greet = defineWorkflow({
  name: 'greet',
  tasks: [
    { id: 'name', run: (ctx) => void ctx.set('name', 'world') },
    { id: 'say', dependsOn: ['name'], run: (ctx) => void ctx.set('greeting', `hello ${ctx.get('name')}`) },
  ],
});

const runner = await DefaultRunner.create({ database: `sqlite:${process.argv[2]}`, workflows: [greet] });
await runner.start();
const result = await runner.execute('greet');
await runner.shutdown();
if (result.status !== 'completed' || result.finalContext.greeting !== 'hello world') {
  throw new Error(`expected a completed pipeline saying hello world, got ${JSON.stringify(result)}`);
}
process.stdout.write(`esm: ${result.status} ${JSON.stringify(result.finalContext)}\n`);
