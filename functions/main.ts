// The container entry point of the handlers (functions/controller.dockerfile runs its bundle,
// dist/controller/server.mjs; infra/knative/service.yaml): the real reconcile step in the listening server.
// `node functions/main.ts` runs the sources; `npm run build:bundles` builds the bundle.
import { productionStep } from './production-step.ts';
import { runServer } from './server.ts';

await runServer(process.env, productionStep);
