export { EXIT } from './failure.js';
export { type CliIo, processIo } from './output.js';
export { buildProgram, runCli } from './program.js';
