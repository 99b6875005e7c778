import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import type { Kubectl } from './kubectl.ts';
import { freePort } from './ports.ts';
import { type ManagedProcess, startProcess, waitUntilHealthy } from './process.ts';
import type { StackInfo } from './stack.ts';

/**
 * Knative Eventing's own source adapters as the local run's event path (DESIGN.md section 15, issue 12):
 * the ApiServerSource receive adapter (API server watch → CloudEvents → `POST /events`) and the
 * PingSource adapter `mtping` (→ `POST /tick`), built from the Go module proxy (scripts/build-binaries.sh
 * knative) and run against the local API server. No Knative controller runs: what it would hand the
 * adapters is made here from the shipped manifests, infra/knative/apiserversource.yaml (the adapter's
 * `K_SOURCE_CONFIG`, translated as Knative v0.50.0's reconciler does) and infra/knative/pingsource.yaml
 * (the PingSource object, with the status the controller would write), so the manifests are what runs.
 */

/** Knative's system namespace: mtping reads its logging and observability ConfigMaps there. */
export const KNATIVE_SYSTEM_NAMESPACE = 'knative-eventing';

const ApiServerSourceSchema = z.object({
  apiVersion: z.literal('sources.knative.dev/v1'),
  kind: z.literal('ApiServerSource'),
  metadata: z.object({ name: z.string(), namespace: z.string() }),
  // Strict: a field added to the manifest that is not translated below (owner, filters, matchExpressions…)
  // is refused instead of silently not tested.
  spec: z.strictObject({
    mode: z.enum(['Reference', 'Resource']).optional(),
    serviceAccountName: z.string().optional(),
    namespaceSelector: z
      .strictObject({ matchLabels: z.record(z.string(), z.string()).optional() })
      .optional(),
    resources: z.array(
      z.strictObject({
        apiVersion: z.string(),
        kind: z.string(),
        selector: z.strictObject({ matchLabels: z.record(z.string(), z.string()) }).optional(),
      }),
    ),
    sink: z.looseObject({ uri: z.string().startsWith('/') }),
  }),
});
export type ApiServerSourceManifest = z.infer<typeof ApiServerSourceSchema>;

const PingSourceSchema = z.object({
  apiVersion: z.literal('sources.knative.dev/v1'),
  kind: z.literal('PingSource'),
  metadata: z.object({ name: z.string(), namespace: z.string() }),
  spec: z.looseObject({
    schedule: z.string(),
    contentType: z.string().optional(),
    data: z.string().optional(),
    sink: z.looseObject({ uri: z.string().startsWith('/') }),
  }),
});
export type PingSourceManifest = z.infer<typeof PingSourceSchema>;

/**
 * Reads the one document of a manifest file and checks it against `schema`. Throws naming the file and the
 * fields this translation does not understand, so a manifest change cannot be silently ignored.
 */
function readManifest<T>(path: string, kind: string, schema: z.ZodType<T>): T {
  const documents = parseAllDocuments(readFileSync(path, 'utf8')).map((doc) => doc.toJS() as unknown);
  const parsed = schema.safeParse(documents[0]);
  if (documents.length !== 1 || !parsed.success) {
    const why = parsed.success ? `${documents.length} documents` : z.prettifyError(parsed.error);
    throw new Error(`read ${path}: expected one ${kind}: ${why}`);
  }
  return parsed.data;
}

/** infra/knative/apiserversource.yaml. */
export function readApiServerSource(path: string): ApiServerSourceManifest {
  return readManifest(path, 'ApiServerSource', ApiServerSourceSchema);
}

/** infra/knative/pingsource.yaml. */
export function readPingSource(path: string): PingSourceManifest {
  return readManifest(path, 'PingSource', PingSourceSchema);
}

/**
 * Kind → resource the way Knative's reconciler guesses it (apimachinery `UnsafeGuessKindToResource`):
 * lower case, then `s` → `ses`, `y` → `ies`, else `+s`.
 */
export function guessResource(kind: string): string {
  const singular = kind.toLowerCase();
  if (singular.endsWith('endpoints')) return singular;
  if (singular.endsWith('s')) return `${singular}es`;
  if (singular.endsWith('y')) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/** A label selector's string form (apimachinery `labels.Selector.String()` of matchLabels: sorted `k=v`). */
function selectorString(matchLabels: Record<string, string>): string {
  return Object.keys(matchLabels)
    .sort()
    .map((key) => `${key}=${matchLabels[key]}`)
    .join(',');
}

/**
 * The receive adapter's `K_SOURCE_CONFIG`, as Knative v0.50.0's ApiServerSource reconciler builds it
 * (pkg/reconciler/apiserversource/resources/receive_adapter.go `makeEnv`): the resources with their guessed
 * GVR and selector, the mode, and the namespaces: an empty `namespaceSelector` watches all of them
 * (`allNamespaces`), none watches the source's own, labels watch the matching ones. `namespaces` is the
 * sorted list the selector matches (the caller lists them).
 */
export function apiServerSourceConfig(source: ApiServerSourceManifest, namespaces: string[]): string {
  const selector = source.spec.namespaceSelector;
  const allNamespaces = selector !== undefined && Object.keys(selector.matchLabels ?? {}).length === 0;
  const config = {
    namespaces: selector === undefined ? [source.metadata.namespace] : [...namespaces].sort(),
    allNamespaces,
    resources: source.spec.resources.map((resource) => {
      const slash = resource.apiVersion.indexOf('/');
      const [group, version] =
        slash === -1
          ? ['', resource.apiVersion]
          : [resource.apiVersion.slice(0, slash), resource.apiVersion.slice(slash + 1)];
      return {
        // schema.GroupVersionResource has no JSON tags: Go writes the field names as they are.
        gvr: { Group: group, Version: version, Resource: guessResource(resource.kind) },
        ...(resource.selector ? { selector: selectorString(resource.selector.matchLabels) } : {}),
      };
    }),
    mode: source.spec.mode ?? 'Reference',
  };
  return JSON.stringify(config);
}

/** The PingSource object to create: the manifest, with a local schedule when given. */
export function pingSourceObject(source: PingSourceManifest, schedule?: string): Record<string, unknown> {
  return { ...source, spec: { ...source.spec, schedule: schedule ?? source.spec.schedule } };
}

/** How long an adapter may take to start watching, ms. */
const READY_TIMEOUT_MS = 60_000;

/**
 * Installs what the receive adapter runs with: the event source's namespace, ServiceAccount and ClusterRole
 * (infra/namespace.yaml, infra/rbac/event-source.yaml), and a kubeconfig in `dir` that impersonates that
 * ServiceAccount, so the adapter has exactly the rights the shipped RBAC grants. Idempotent.
 */
export async function prepareEventSourceIdentity(options: {
  stack: StackInfo;
  kubectl: Kubectl;
  repoRoot: string;
  source: ApiServerSourceManifest;
  dir: string;
}): Promise<{ kubeconfig: string }> {
  const { kubectl, repoRoot, source } = options;
  await kubectl.run(['apply', '-f', join(repoRoot, 'infra', 'namespace.yaml')]);
  await kubectl.run(['apply', '-f', join(repoRoot, 'infra', 'rbac', 'event-source.yaml')]);
  const user = `system:serviceaccount:${source.metadata.namespace}:${source.spec.serviceAccountName ?? 'default'}`;
  return { kubeconfig: impersonatingKubeconfig(options.stack, user, options.dir) };
}

/** What one receive adapter process needs. */
export interface ApiServerSourceAdapterOptions {
  stack: StackInfo;
  source: ApiServerSourceManifest;
  /** The adapter's `K_SOURCE_CONFIG` ({@link apiServerSourceConfig}). */
  sourceConfig: string;
  /** `K_SINK`: the handlers' base URL plus the manifest's `sink.uri`. */
  sink: string;
  kubeconfig: string;
  logDir: string;
}

/**
 * Starts Knative's ApiServerSource receive adapter with the environment Knative's reconciler gives it and
 * waits until every informer has listed its resource ("Caches populated" at klog verbosity 2, one per
 * resource and watched namespace; all our resources are namespaced). Only then is it safe to change what
 * it watches: its informers hand the initial list to the store's Replace, which the adapter ignores, so an
 * object changed before that list sends no event. Throws with the log tail when it exits or is not ready
 * within a minute.
 */
export async function startApiServerSourceAdapter(
  options: ApiServerSourceAdapterOptions,
): Promise<ManagedProcess> {
  const { stack, source } = options;
  const config = JSON.parse(options.sourceConfig) as {
    namespaces: string[];
    allNamespaces: boolean;
    resources: unknown[];
  };
  const informers = config.resources.length * (config.allNamespaces ? 1 : config.namespaces.length);
  const logPath = join(options.logDir, 'apiserver-source.log');
  const from = existsSync(logPath) ? statSync(logPath).size : 0;
  const proc = startProcess('apiserver-source', stack.knative.apiServerReceiveAdapter, [], options.logDir, {
    ...adapterEnv(options.kubeconfig),
    K_SINK: options.sink,
    K_SOURCE_CONFIG: options.sourceConfig,
    NAMESPACE: source.metadata.namespace,
    NAME: source.metadata.name,
    SYSTEM_NAMESPACE: KNATIVE_SYSTEM_NAMESPACE,
    METRICS_DOMAIN: 'knative.dev/eventing',
    // pprof listens here; each adapter gets its own free port (the default 8008 would collide).
    PROFILING_PORT: String(await freePort()),
    // client-go's reflectors log "Caches populated" at verbosity 2.
    K_KLOG_VERBOSITY: '2',
  });
  await waitUntilHealthy(
    proc,
    `watching (${informers} informers listed)`,
    async () => {
      const log = readFileSync(logPath).subarray(from).toString('utf8');
      return log.split('Caches populated').length - 1 >= informers;
    },
    READY_TIMEOUT_MS,
  );
  return proc;
}

/** Options of {@link startKnativeSources}. */
export interface KnativeSourcesOptions {
  stack: StackInfo;
  kubectl: Kubectl;
  repoRoot: string;
  /** Base URL of the handlers; the manifests' `sink.uri` is appended. */
  handlerUrl: string;
  logDir: string;
  /** A faster schedule than the manifest's once a minute, e.g. `@every 2s` (mtping accepts seconds). */
  tickSchedule?: string;
  log?: (line: string) => void;
}

/** The running adapters. */
export interface KnativeSources {
  /** The ApiServerSource receive adapter (replaced by `restartApiServerSource`). */
  apiServerSource(): ManagedProcess;
  /**
   * Kills the receive adapter and starts it again. The new one lists everything but sends nothing about
   * objects that exist (its Replace is a no-op); what changed while it was down waits for the sweep.
   */
  restartApiServerSource(): Promise<void>;
  /** Kills both adapters (mtping waits for second 55 of the minute on SIGTERM) and deletes the PingSource. */
  stop(): Promise<void>;
}

/**
 * Starts both adapters against the local API server with their sinks on the handlers. Installs what they
 * read first (idempotent): the receive adapter's identity ({@link prepareEventSourceIdentity}); the
 * PingSource CRD of the same Knative release, Knative's system namespace with the two ConfigMaps mtping
 * reads, and the PingSource with the status Knative's controller would write (sink and Ready). Throws with
 * an adapter's log tail when one does not start.
 */
export async function startKnativeSources(options: KnativeSourcesOptions): Promise<KnativeSources> {
  const { stack, kubectl, repoRoot } = options;
  const apiSource = readApiServerSource(join(repoRoot, 'infra', 'knative', 'apiserversource.yaml'));
  const pingSource = readPingSource(join(repoRoot, 'infra', 'knative', 'pingsource.yaml'));
  const dir = join(options.logDir, '..', 'knative');
  mkdirSync(dir, { recursive: true });

  options.log?.("installing what Knative's adapters read (PingSource CRD, config maps, event source RBAC)");
  const { kubeconfig } = await prepareEventSourceIdentity({
    stack,
    kubectl,
    repoRoot,
    source: apiSource,
    dir,
  });
  await kubectl.run(['apply', '--server-side', '--force-conflicts', '-f', stack.knative.pingSourceCrd]);
  await kubectl.run([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    '-f',
    stack.knative.pingSourceCrd,
  ]);
  await kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KNATIVE_SYSTEM_NAMESPACE } },
        ...['config-logging', 'config-observability'].map((name) => ({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name, namespace: KNATIVE_SYSTEM_NAMESPACE },
          data: {},
        })),
      ],
    }),
  );

  const namespaceLabels = apiSource.spec.namespaceSelector?.matchLabels ?? {};
  const namespaces = (
    await kubectl.run([
      'get',
      'namespaces',
      ...(Object.keys(namespaceLabels).length > 0 ? ['-l', selectorString(namespaceLabels)] : []),
      '-o',
      'jsonpath={.items[*].metadata.name}',
    ])
  )
    .split(' ')
    .filter(Boolean);
  const adapterOptions: ApiServerSourceAdapterOptions = {
    stack,
    source: apiSource,
    sourceConfig: apiServerSourceConfig(apiSource, namespaces),
    sink: `${options.handlerUrl}${apiSource.spec.sink.uri}`,
    kubeconfig,
    logDir: options.logDir,
  };

  const pingNamespace = pingSource.metadata.namespace;
  const pingName = pingSource.metadata.name;
  await kubectl.run(['apply', '-f', '-'], JSON.stringify(pingSourceObject(pingSource, options.tickSchedule)));
  await kubectl.run([
    'patch',
    'pingsource',
    pingName,
    '-n',
    pingNamespace,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: {
        sinkUri: `${options.handlerUrl}${pingSource.spec.sink.uri}`,
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }],
      },
    }),
  ]);

  options.log?.(`starting Knative's PingSource adapter (mtping v${stack.versions.knativeEventing})`);
  const mtping = startProcess('mtping', stack.knative.mtping, [], options.logDir, {
    ...adapterEnv(stack.kubeconfigPath),
    SYSTEM_NAMESPACE: KNATIVE_SYSTEM_NAMESPACE,
    NAMESPACE: KNATIVE_SYSTEM_NAMESPACE,
    METRICS_DOMAIN: 'knative.dev/eventing',
    PROFILING_PORT: String(await freePort()),
  });
  let apiServer: ManagedProcess;
  try {
    await waitUntilHealthy(
      mtping,
      'scheduling the PingSource',
      async () => readFileSync(mtping.logPath, 'utf8').includes(`${pingNamespace}/${pingName}`),
      READY_TIMEOUT_MS,
    );
    options.log?.(
      `starting Knative's ApiServerSource receive adapter (v${stack.versions.knativeEventing}) → ${adapterOptions.sink}`,
    );
    apiServer = await startApiServerSourceAdapter(adapterOptions);
  } catch (error) {
    await mtping.kill();
    throw error;
  }
  return {
    apiServerSource: () => apiServer,
    async restartApiServerSource() {
      await apiServer.kill();
      apiServer = await startApiServerSourceAdapter(adapterOptions);
    },
    async stop() {
      await Promise.all([apiServer.kill(), mtping.kill()]);
      await kubectl
        .run(['delete', 'pingsource', pingName, '-n', pingNamespace, '--ignore-not-found', '--wait=false'])
        .catch(() => undefined);
    },
  };
}

/**
 * The adapters' environment: only what they read (the parent's would point them at other clusters), the
 * kubeconfig they run with, and Knative's logging at info.
 */
function adapterEnv(kubeconfig: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    KUBECONFIG: kubeconfig,
    K_LOGGING_CONFIG: JSON.stringify({
      'zap-logger-config': JSON.stringify({ level: 'info', encoding: 'json', outputPaths: ['stdout'] }),
    }),
  };
}

/** A kubeconfig for the stack's API server with its admin token, impersonating `user`. */
function impersonatingKubeconfig(stack: StackInfo, user: string, dir: string): string {
  const path = join(dir, 'event-source.kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: 'local', cluster: { server: stack.apiServerUrl, 'certificate-authority': stack.caPath } },
    ],
    users: [{ name: 'event-source', user: { token: stack.adminToken, as: user } }],
    contexts: [{ name: 'event-source', context: { cluster: 'local', user: 'event-source' } }],
    'current-context': 'event-source',
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}
