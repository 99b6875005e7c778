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
 * adapters is made here from the shipped manifests, the two ApiServerSources of infra/knative/ (each
 * receive adapter's `K_SOURCE_CONFIG`, translated as Knative v0.50.0's reconciler does, under the
 * source's own ServiceAccount) and infra/knative/pingsource.yaml (the PingSource object, with the status
 * the controller would write), so the manifests are what runs.
 */

/** Knative's system namespace: mtping reads its logging and observability ConfigMaps there. */
export const KNATIVE_SYSTEM_NAMESPACE = 'knative-eventing';

/**
 * One `matchExpressions` entry: the four operators apimachinery's `metav1.LabelSelectorAsSelector` takes
 * (any other is refused by name), with the values `labels.NewRequirement` insists on: none for `Exists`
 * and `DoesNotExist`, at least one for `In` and `NotIn`.
 */
const LabelSelectorRequirementSchema = z
  .strictObject({
    key: z.string().min(1),
    operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
    values: z.array(z.string()).optional(),
  })
  .refine(
    (requirement) =>
      requirement.operator === 'In' || requirement.operator === 'NotIn'
        ? (requirement.values ?? []).length > 0
        : (requirement.values ?? []).length === 0,
    { message: "'In' and 'NotIn' take values; 'Exists' and 'DoesNotExist' take none" },
  );

/** A `metav1.LabelSelector`. */
const LabelSelectorSchema = z.strictObject({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z.array(LabelSelectorRequirementSchema).optional(),
});
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

const ApiServerSourceSchema = z.object({
  apiVersion: z.literal('sources.knative.dev/v1'),
  kind: z.literal('ApiServerSource'),
  metadata: z.object({ name: z.string(), namespace: z.string() }),
  // Strict: a field added to the manifest that is not translated below (owner, filters…) is refused
  // instead of silently not tested.
  spec: z.strictObject({
    mode: z.enum(['Reference', 'Resource']).optional(),
    serviceAccountName: z.string().optional(),
    namespaceSelector: LabelSelectorSchema.optional(),
    resources: z.array(
      z.strictObject({
        apiVersion: z.string(),
        kind: z.string(),
        selector: LabelSelectorSchema.optional(),
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

/** infra/knative/apiserversource.yaml or secret-apiserversource.yaml. */
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

/**
 * A label selector's string form, as apimachinery renders `metav1.LabelSelectorAsSelector(s).String()`
 * (k8s.io/apimachinery pkg/labels/selector.go): one requirement per `matchLabels` entry (`k=v`) and per
 * `matchExpressions` entry (`Exists` → `k`, `DoesNotExist` → `!k`, `In` → `k in (a,b)`, `NotIn` →
 * `k notin (a,b)`, values sorted), sorted by key (requirements of one key in the order given: Go's sort of
 * so few is an insertion sort), joined by commas. An empty selector (everything) is ''.
 */
export function selectorString(selector: LabelSelector): string {
  const labels = selector.matchLabels ?? {};
  const requirements = [
    ...Object.keys(labels)
      .sort()
      .map((key) => ({ key, text: `${key}=${labels[key]}` })),
    ...(selector.matchExpressions ?? []).map(({ key, operator, values = [] }) => {
      const set = `(${[...values].sort().join(',')})`;
      const text = {
        Exists: key,
        DoesNotExist: `!${key}`,
        In: `${key} in ${set}`,
        NotIn: `${key} notin ${set}`,
      }[operator];
      return { key, text };
    }),
  ];
  // Array.prototype.sort is stable: requirements of one key keep their order.
  return requirements
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((requirement) => requirement.text)
    .join(',');
}

/** Whether a selector selects everything (no labels, no expressions). */
function selectsEverything(selector: LabelSelector): boolean {
  return Object.keys(selector.matchLabels ?? {}).length + (selector.matchExpressions ?? []).length === 0;
}

/**
 * The receive adapter's `K_SOURCE_CONFIG`, as Knative v0.50.0's ApiServerSource reconciler builds it
 * (pkg/reconciler/apiserversource/resources/receive_adapter.go `makeEnv`): the resources with their guessed
 * GVR and selector ({@link selectorString}; an empty one is left out, as Go's `omitempty` does), the mode,
 * and the namespaces: an empty `namespaceSelector` watches all of them (`allNamespaces`), none watches the
 * source's own, a selector watches the matching ones. `namespaces` is the list the selector matches (the
 * caller lists them, {@link selectedNamespaces}); it is sorted here.
 */
export function apiServerSourceConfig(source: ApiServerSourceManifest, namespaces: string[]): string {
  const selector = source.spec.namespaceSelector;
  const allNamespaces = selector !== undefined && selectsEverything(selector);
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
        ...(resource.selector && !selectsEverything(resource.selector)
          ? { selector: selectorString(resource.selector) }
          : {}),
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
 * The ApiServerSources of infra/knative/ the local run starts, each with the file of infra/rbac/ that
 * defines its ServiceAccount and rights, and its adapter's process (and log) name: our objects
 * (apiserversource.yaml under captf-event-source) and the Secrets waits depend on
 * (secret-apiserversource.yaml under captf-secret-events, DESIGN.md section 6).
 */
export const API_SERVER_SOURCES = {
  objects: { manifest: 'apiserversource.yaml', rbac: 'event-source.yaml', process: 'apiserver-source' },
  secrets: {
    manifest: 'secret-apiserversource.yaml',
    rbac: 'secret-events.yaml',
    process: 'apiserver-source-secrets',
  },
} as const;
export type ApiServerSourceRole = keyof typeof API_SERVER_SOURCES;

/**
 * Installs what a receive adapter runs with: the event source's namespace (infra/namespace.yaml), the
 * ServiceAccount and rights of `infra/rbac/<rbac>`, which must define the source's ServiceAccount, and a
 * kubeconfig in `dir` (named after the ServiceAccount) that impersonates it, so the adapter has exactly the
 * rights the shipped RBAC grants that identity and no other source's. Idempotent. Throws when the RBAC file
 * does not define the ServiceAccount.
 */
export async function prepareEventSourceIdentity(options: {
  stack: StackInfo;
  kubectl: Kubectl;
  repoRoot: string;
  source: ApiServerSourceManifest;
  /** The file of infra/rbac/, e.g. `event-source.yaml`. */
  rbac: string;
  dir: string;
}): Promise<{ kubeconfig: string }> {
  const { kubectl, repoRoot, source } = options;
  const rbacPath = join(repoRoot, 'infra', 'rbac', options.rbac);
  const user = sourceIdentity(source, rbacPath);
  await kubectl.run(['apply', '-f', join(repoRoot, 'infra', 'namespace.yaml')]);
  await kubectl.run(['apply', '-f', rbacPath]);
  const account = source.spec.serviceAccountName ?? 'default';
  return {
    kubeconfig: impersonatingKubeconfig(options.stack, user, join(options.dir, `${account}.kubeconfig`)),
  };
}

/**
 * The user a source's adapter runs as, `system:serviceaccount:<namespace>:<serviceAccountName>` (the
 * source's namespace; `default` without a name), once the RBAC file at `rbacPath` is seen to define that
 * ServiceAccount. Throws naming the file when it does not (a source paired with another's rights).
 */
export function sourceIdentity(source: ApiServerSourceManifest, rbacPath: string): string {
  const account = source.spec.serviceAccountName ?? 'default';
  const namespace = source.metadata.namespace;
  const defined = parseAllDocuments(readFileSync(rbacPath, 'utf8')).some((doc) => {
    const object = doc.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } } | null;
    return (
      object?.kind === 'ServiceAccount' &&
      object.metadata?.name === account &&
      object.metadata.namespace === namespace
    );
  });
  if (!defined) throw new Error(`${rbacPath} defines no ServiceAccount ${namespace}/${account}`);
  return `system:serviceaccount:${namespace}:${account}`;
}

/** The namespaces a source's `namespaceSelector` matches (all when it has none), as kubectl lists them. */
export async function selectedNamespaces(
  kubectl: Kubectl,
  source: ApiServerSourceManifest,
): Promise<string[]> {
  const selector = selectorString(source.spec.namespaceSelector ?? {});
  const names = await kubectl.run([
    'get',
    'namespaces',
    ...(selector === '' ? [] : ['-l', selector]),
    '-o',
    'jsonpath={.items[*].metadata.name}',
  ]);
  return names.split(' ').filter(Boolean);
}

/** What one receive adapter process needs. */
export interface ApiServerSourceAdapterOptions {
  /** The process's name; its log is `<logDir>/<name>.log`. */
  name: string;
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
 * within a minute (killed).
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
  const logPath = join(options.logDir, `${options.name}.log`);
  const from = existsSync(logPath) ? statSync(logPath).size : 0;
  const proc = startProcess(options.name, stack.knative.apiServerReceiveAdapter, [], options.logDir, {
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
  try {
    await waitUntilHealthy(
      proc,
      `watching (${informers} informers listed)`,
      async () => {
        const log = readFileSync(logPath).subarray(from).toString('utf8');
        return log.split('Caches populated').length - 1 >= informers;
      },
      READY_TIMEOUT_MS,
    );
  } catch (error) {
    await proc.kill();
    throw error;
  }
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
  /** The receive adapter of one ApiServerSource (replaced by `restartApiServerSource`); default our objects'. */
  apiServerSource(role?: ApiServerSourceRole): ManagedProcess;
  /**
   * Kills a receive adapter (default our objects') and starts it again. The new one lists everything but
   * sends nothing about objects that exist (its Replace is a no-op); what changed while it was down waits
   * for the sweep.
   */
  restartApiServerSource(role?: ApiServerSourceRole): Promise<void>;
  /** Kills the adapters (mtping waits for second 55 of the minute on SIGTERM) and deletes the PingSource. */
  stop(): Promise<void>;
}

/**
 * Starts the adapters against the local API server with their sinks on the handlers: one receive adapter
 * per ApiServerSource of {@link API_SERVER_SOURCES}, and mtping. Installs what they read first
 * (idempotent): each receive adapter's identity ({@link prepareEventSourceIdentity}); the PingSource CRD
 * of the same Knative release, Knative's system namespace with the two ConfigMaps mtping reads, and the
 * PingSource with the status Knative's controller would write (sink and Ready). Throws with an adapter's
 * log tail when one does not start (the ones started are killed).
 */
export async function startKnativeSources(options: KnativeSourcesOptions): Promise<KnativeSources> {
  const { stack, kubectl, repoRoot } = options;
  const pingSource = readPingSource(join(repoRoot, 'infra', 'knative', 'pingsource.yaml'));
  const dir = join(options.logDir, '..', 'knative');
  mkdirSync(dir, { recursive: true });

  options.log?.("installing what Knative's adapters read (PingSource CRD, config maps, event sources' RBAC)");
  const roles = Object.keys(API_SERVER_SOURCES) as ApiServerSourceRole[];
  // Filled for every role by the loop below.
  const adapterOptions = {} as Record<ApiServerSourceRole, ApiServerSourceAdapterOptions>;
  for (const role of roles) {
    const { manifest, rbac, process: name } = API_SERVER_SOURCES[role];
    const source = readApiServerSource(join(repoRoot, 'infra', 'knative', manifest));
    const { kubeconfig } = await prepareEventSourceIdentity({ stack, kubectl, repoRoot, source, rbac, dir });
    adapterOptions[role] = {
      name,
      stack,
      source,
      sourceConfig: apiServerSourceConfig(source, await selectedNamespaces(kubectl, source)),
      sink: `${options.handlerUrl}${source.spec.sink.uri}`,
      kubeconfig,
      logDir: options.logDir,
    };
  }
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
  const adapters = new Map<ApiServerSourceRole, ManagedProcess>();
  try {
    await waitUntilHealthy(
      mtping,
      'scheduling the PingSource',
      async () => readFileSync(mtping.logPath, 'utf8').includes(`${pingNamespace}/${pingName}`),
      READY_TIMEOUT_MS,
    );
    // Both at once: each waits for its own informers' lists.
    const started = await Promise.allSettled(
      roles.map(async (role) => {
        const adapter = adapterOptions[role];
        options.log?.(
          `starting Knative's ApiServerSource receive adapter for ${adapter.source.metadata.name} (v${stack.versions.knativeEventing}) → ${adapter.sink}`,
        );
        adapters.set(role, await startApiServerSourceAdapter(adapter));
      }),
    );
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  } catch (error) {
    await Promise.all([mtping.kill(), ...[...adapters.values()].map((adapter) => adapter.kill())]);
    throw error;
  }
  const adapterOf = (role: ApiServerSourceRole): ManagedProcess => {
    const adapter = adapters.get(role);
    if (adapter === undefined) throw new Error(`no receive adapter for ${role}`);
    return adapter;
  };
  return {
    apiServerSource: (role = 'objects') => adapterOf(role),
    async restartApiServerSource(role = 'objects') {
      await adapterOf(role).kill();
      adapters.set(role, await startApiServerSourceAdapter(adapterOptions[role]));
    },
    async stop() {
      await Promise.all([mtping.kill(), ...[...adapters.values()].map((adapter) => adapter.kill())]);
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

/** Writes a kubeconfig for the stack's API server with its admin token, impersonating `user`, to `path`. */
function impersonatingKubeconfig(stack: StackInfo, user: string, path: string): string {
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
