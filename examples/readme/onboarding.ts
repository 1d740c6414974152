import { defineWorkflow } from '@orreryjs/runner';
import { sendTips, sendWelcome } from './helpers.js'; // your own code

export const onboarding = defineWorkflow({
  name: 'onboarding',
  tasks: [
    { id: 'welcome', run: (ctx) => sendWelcome(String(ctx.get('userId'))) },
    // One hour after the welcome: a row whose availableAt is an hour ahead, not a sleeping task.
    { id: 'tips', dependsOn: ['welcome'], delayMs: 3_600_000, run: (ctx) => sendTips(String(ctx.get('userId'))) },
  ],
});
