import { main } from '../src/plugin/main.ts';

// The entry of the `kubectl captf` executable (functions/bundle.ts bundles it into dist/plugin/kubectl-captf):
// kubectl runs it with the arguments that follow `kubectl captf`.
process.exitCode = await main(process.argv.slice(2));
