#!/usr/bin/env node
import { runCli } from './program.js';

// exitCode, not exit(): pending output is flushed and the process ends once handles close.
process.exitCode = await runCli(process.argv.slice(2));
