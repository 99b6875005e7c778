import { CLUSTERCTL_MOVE_LABEL } from '../core/run-secret-manifest.ts';
import type { StateReport } from '../schemas/result.ts';
import type { BackendConfig } from '../schemas/run-config.ts';

/**
 * How the runtime reaches the API server for the kubernetes state backend (issue 16 item 3): pure decisions
 * for the loopback proxy of src/runner/kube-proxy.ts.
 *
 * Each object's runner pod runs as a ServiceAccount whose Role names exactly one state Secret and one lock
 * Lease (`resourceNames`, src/core/runner-identity.ts), with the verbs `get` and `update` only. OpenTofu's
 * kubernetes backend lists Secrets on every `init` (backend_state.go `Workspaces`: LIST secrets with
 * labelSelector `tfstate=true`, to find the workspaces). A Role could allow that list only with `list` on
 * the name (and the request would need the field selector `metadata.name=<name>`), and RBAC lets the
 * controller grant only what it holds itself, while the controller may list no Secrets (issue 16 item 4). So
 * the runner points the backend at a loopback proxy that answers that one list itself, from a `get` of the
 * one state Secret: the list of the workspaces this run can see, which is all the backend wants from it.
 */

/** The workspace the runner always runs (it never selects another; OpenTofu's `backend.DefaultStateName`). */
export const DEFAULT_WORKSPACE = 'default';

/**
 * Keys of the kubernetes backend that say where, or as whom, the runtime connects (OpenTofu's
 * remote-state/kubernetes/backend.go). With any of them the module's author chose the connection: it is
 * not the pod's ServiceAccount, so its RBAC is not ours to work around and the backend is left alone.
 */
const CONNECTION_KEYS: readonly string[] = [
  'config_path',
  'config_paths',
  'host',
  'token',
  'username',
  'password',
  'client_certificate',
  'client_key',
  'cluster_ca_certificate',
  'insecure',
  'config_context',
  'config_context_auth_info',
  'config_context_cluster',
  'exec',
];

/** What the proxy restricts: the one state Secret of the run, in its namespace. */
export interface StateSecretScope {
  namespace: string;
  /** `tfstate-<workspace>-<secret_suffix>` (OpenTofu's `createSecretName`). */
  secretName: string;
}

/**
 * How the runtime reaches the backend: `direct` (the run config's backend as it is) or `proxied` (through
 * the loopback proxy, which reaches the API server as the pod's ServiceAccount).
 */
export type BackendAccess = { kind: 'direct' } | { kind: 'proxied'; scope: StateSecretScope };

/** HCL converts the string `"true"` to the bool an attribute of type bool wants; nothing else is true. */
function isTrue(value: string | number | boolean | undefined): boolean {
  return value === true || value === 'true';
}

/**
 * Decides whether the backend is the kubernetes backend reaching the API server in-cluster as the pod's
 * ServiceAccount: type `kubernetes`, `in_cluster_config` true (the controller's default backend,
 * src/core/run-secret-manifest.ts `buildRunConfig`, sends `true`; absent means OpenTofu's default, false,
 * which loads a kubeconfig instead), a `secret_suffix`, and none of CONNECTION_KEYS. The namespace is the
 * config's, else OpenTofu's default `default` (the controller always sends one; KUBE_NAMESPACE of the
 * runtime's environment is not consulted). Pure.
 */
export function backendAccess(backend: BackendConfig | undefined): BackendAccess {
  if (backend === undefined || backend.type !== 'kubernetes') return { kind: 'direct' };
  const config = backend.config;
  if (!isTrue(config.in_cluster_config)) return { kind: 'direct' };
  if (CONNECTION_KEYS.some((key) => config[key] !== undefined)) return { kind: 'direct' };
  const suffix = config.secret_suffix;
  // Without a suffix the backend refuses its config itself, with its own message.
  if (suffix === undefined || suffix === '') return { kind: 'direct' };
  const namespace =
    typeof config.namespace === 'string' && config.namespace !== '' ? config.namespace : 'default';
  return {
    kind: 'proxied',
    scope: { namespace, secretName: `tfstate-${DEFAULT_WORKSPACE}-${String(suffix)}` },
  };
}

/**
 * The backend config a proxied run hands the runtime: the same config, loading `kubeconfigPath` (which
 * names the proxy) instead of the in-cluster config. Pure; returns a copy.
 */
export function proxiedBackend(backend: BackendConfig, kubeconfigPath: string): BackendConfig {
  return {
    ...backend,
    config: { ...backend.config, in_cluster_config: false, config_path: kubeconfigPath },
  };
}

/** How the proxy serves one request. */
export type ProxyRoute =
  /** Forwarded unchanged. */
  | { kind: 'forward' }
  /** The backend's workspace list: answered from a read of the state Secret (`getTarget`). */
  | { kind: 'list-from-get'; getTarget: string; labelSelector: string | undefined };

/**
 * Whether a `watch` query parameter makes the request a watch: the API server decodes it as a bool that is
 * false only for `0` and `false` (any case), and true for anything else, even an empty value
 * (k8s.io/apimachinery runtime `Convert_Slice_string_To_bool`).
 */
function isWatch(params: URLSearchParams): boolean {
  const value = params.get('watch');
  if (value === null) return false;
  return value !== '0' && value.toLowerCase() !== 'false';
}

/**
 * Routes one request target (path and query, as a client sends it): a GET that lists the Secret collection
 * of the scope's namespace (`/api/v1/namespaces/<ns>/secrets`, not a watch) is answered from a GET of the
 * scope's state Secret; every other request (a named get, a watch, an update, another resource or
 * namespace) is forwarded as it is. Pure.
 */
export function routeOf(method: string, target: string, scope: StateSecretScope): ProxyRoute {
  if (method !== 'GET') return { kind: 'forward' };
  const url = new URL(target, 'http://proxy.invalid');
  const collection = `/api/v1/namespaces/${encodeURIComponent(scope.namespace)}/secrets`;
  // The API server splits the path on `/` after trimming them, so a trailing slash names the same collection.
  if (url.pathname !== collection && url.pathname !== `${collection}/`) return { kind: 'forward' };
  if (isWatch(url.searchParams)) return { kind: 'forward' };
  return {
    kind: 'list-from-get',
    getTarget: `${collection}/${encodeURIComponent(scope.secretName)}`,
    labelSelector: url.searchParams.get('labelSelector') ?? undefined,
  };
}

/**
 * Whether the proxy reads the answer to a request for what it says of the state Secret (the result's
 * `state`, src/schemas/result.ts): a GET or PUT of the scope's state Secret by name, or a POST to its
 * namespace's Secret collection (the backend creating the Secret; the answer names which). The backend's
 * list is answered from a GET of the Secret and read there. Pure.
 */
export function observesState(method: string, target: string, scope: StateSecretScope): boolean {
  const { pathname } = new URL(target, 'http://proxy.invalid');
  const collection = `/api/v1/namespaces/${encodeURIComponent(scope.namespace)}/secrets`;
  if (method === 'POST') return pathname === collection || pathname === `${collection}/`;
  if (method !== 'GET' && method !== 'PUT') return false;
  return pathname === `${collection}/${encodeURIComponent(scope.secretName)}`;
}

/**
 * What a successful answer's body says of the state Secret: the bytes of its data values, decoded from
 * base64 (what the API server's 1 MiB limit weighs, less the metadata), and whether it carries the
 * `clusterctl move` label; undefined for a body that is not the scope's Secret. Pure.
 */
export function stateReportOf(body: string, scope: StateSecretScope): StateReport | undefined {
  let secret: {
    kind?: unknown;
    metadata?: { name?: unknown; namespace?: unknown; labels?: Record<string, unknown> };
    data?: Record<string, unknown>;
  };
  try {
    secret = JSON.parse(body) as typeof secret;
  } catch {
    return undefined;
  }
  if (secret === null || typeof secret !== 'object' || secret.kind !== 'Secret') return undefined;
  if (secret.metadata?.name !== scope.secretName || secret.metadata.namespace !== scope.namespace)
    return undefined;
  const bytes = Object.values(secret.data ?? {}).reduce<number>(
    (sum, value) => sum + (typeof value === 'string' ? Buffer.from(value, 'base64').length : 0),
    0,
  );
  return { bytes, moveLabel: typeof secret.metadata.labels?.[CLUSTERCTL_MOVE_LABEL] === 'string' };
}

/**
 * Whether labels satisfy a label selector's equality and existence terms (`k=v`, `k==v`, `k!=v`, `k`,
 * `!k`); a set-based term (`k in (…)`) is not judged and counts as satisfied: the backend sends only
 * `tfstate=true`, and a Secret shown too many is a workspace more, never a state lost.
 */
export function matchesLabelSelector(labels: Record<string, string>, selector: string | undefined): boolean {
  if (selector === undefined || selector.trim() === '') return true;
  if (/[()]/.test(selector)) return true;
  return selector.split(',').every((raw) => {
    const term = raw.trim();
    const unequal = term.match(/^([^!=\s]+)\s*!=\s*(.*)$/);
    if (unequal) return labels[unequal[1] ?? ''] !== unequal[2];
    const equal = term.match(/^([^!=\s]+)\s*==?\s*(.*)$/);
    if (equal) return labels[equal[1] ?? ''] === equal[2];
    if (term.startsWith('!')) return !Object.hasOwn(labels, term.slice(1).trim());
    return Object.hasOwn(labels, term);
  });
}

/**
 * The answer to the backend's Secret list from the upstream answer to the GET of the state Secret: 200 → a
 * `SecretList` holding it when it matches the list's label selector, else empty; 404 → an empty
 * `SecretList` (no state yet); anything else (403, 5xx) → the upstream answer as it is. Pure.
 */
export function secretListAnswer(
  upstream: { status: number; body: string },
  labelSelector: string | undefined,
): { status: number; body: string } {
  const list = (items: unknown[]) => ({
    status: 200,
    body: JSON.stringify({ kind: 'SecretList', apiVersion: 'v1', metadata: {}, items }),
  });
  if (upstream.status === 404) return list([]);
  if (upstream.status !== 200) return upstream;
  let secret: { metadata?: { labels?: Record<string, string> } };
  try {
    secret = JSON.parse(upstream.body) as typeof secret;
  } catch {
    return { status: 502, body: upstream.body };
  }
  return list(matchesLabelSelector(secret.metadata?.labels ?? {}, labelSelector) ? [secret] : []);
}

/** Where the in-cluster API server is: `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`. */
export type ApiServerOrigin =
  | { ok: true; hostname: string; port: number; url: string }
  | { ok: false; message: string };

/**
 * The API server's address as client-go's `rest.InClusterConfig` finds it: from the two environment
 * variables the kubelet sets in every pod; an IPv6 host goes in brackets in the URL. Pure.
 */
export function apiServerOrigin(env: NodeJS.ProcessEnv): ApiServerOrigin {
  const hostname = env.KUBERNETES_SERVICE_HOST ?? '';
  const portText = env.KUBERNETES_SERVICE_PORT ?? '';
  if (hostname === '' || portText === '') {
    return {
      ok: false,
      message:
        'in-cluster kubernetes backend: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (not running in a pod?)',
    };
  }
  const port = Number(portText);
  if (!/^[0-9]+$/.test(portText) || port < 1 || port > 65_535) {
    return {
      ok: false,
      message: `in-cluster kubernetes backend: KUBERNETES_SERVICE_PORT ${portText} is no port`,
    };
  }
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  return { ok: true, hostname, port, url: `https://${host}:${port}` };
}

/**
 * The kubeconfig the runtime loads (`config_path`): one cluster, the proxy at `serverUrl`, and a user
 * without credentials, since the proxy adds the ServiceAccount's token itself. JSON, which kubeconfig
 * loading accepts as YAML. Pure.
 */
export function proxyKubeconfig(serverUrl: string, namespace: string): string {
  return `${JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'captf-in-cluster', cluster: { server: serverUrl } }],
      users: [{ name: 'captf-service-account', user: {} }],
      contexts: [
        {
          name: 'captf-in-cluster',
          context: { cluster: 'captf-in-cluster', user: 'captf-service-account', namespace },
        },
      ],
      'current-context': 'captf-in-cluster',
    },
    null,
    2,
  )}\n`;
}

/**
 * Hop-by-hop headers (RFC 9110 section 7.6.1), which a proxy never forwards; plus `host`, set for the
 * upstream, and `authorization`, which the proxy replaces with the ServiceAccount's token.
 */
const NOT_FORWARDED: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'authorization',
]);

/**
 * The headers of a request or response as the proxy forwards them: without NOT_FORWARDED and without the
 * headers the `connection` header names. Names are lower case (as node:http gives them). Pure.
 */
export function forwardedHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Record<string, string | string[]> {
  const connection = headers.connection;
  const named = new Set(
    (Array.isArray(connection) ? connection.join(',') : (connection ?? ''))
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ''),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NOT_FORWARDED.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  return out;
}
