// The library's messages advise code (`pass { onConflict: 'update' }`, `listCronSchedules()`);
// at the command line the same advice is a flag or a command. Each rule rewrites one phrase.
const RULES: ReadonlyArray<readonly [RegExp, string]> = [
  [/pass \{ onConflict: 'update' \} to replace it/, 'pass --on-conflict update to replace it'],
  [/list them with listCronSchedules\(\)/, 'list them with `orrery schedules list`'],
  [
    /ids are UUIDs as returned by executeAsync\(\) or listExecutions\(\)/,
    'ids are UUIDs, or their first 8 or more hex digits, as `orrery executions list` and `orrery run` print',
  ],
  [
    /\(DefaultRunner\.create\(\{ workflows \}\) or `orrery worker`\)/,
    '(`orrery worker <module>`; `orrery workflows` lists the registered ones)',
  ],
  [
    /Open it once with migrate: true \(the default\) to apply them, then retry\./,
    'Apply them with `orrery migrate`, then retry.',
  ],
  [/\(orrery migrate, or open it without mustExist\)/, '(`orrery migrate` creates it)'],
  [/^allowedHosts entry/, '--allowed-host'],
];

/** `message` with the library's advice to code replaced by the CLI's flags and commands. */
export function withCliAdvice(message: string): string {
  let advised = message;
  for (const [pattern, replacement] of RULES) advised = advised.replace(pattern, replacement);
  return advised;
}
