import type { BackendConfig } from '../schemas/run-config.ts';

/**
 * How the runtime reaches the API server for the kubernetes state backend (issue 16 item 3): pure decisions
 * for the loopback proxy of src/runner/kube-proxy.ts.
 *
 * Each object's runner pod runs as a ServiceAccount whose Role names exactly one state Secret and one lock
 * Lease (`resourceNames`). OpenTofu's kubernetes backend lists Secrets on every `init` (backend_state.go
 * `Workspaces`: LIST secrets with labelSelector `tfstate=true`), and RBAC authorizes a list against
 * `resourceNames` only when the request carries the field selector `metadata.name=<name>` (k8s.io/apiserver
 * requestinfo: a list or watch whose field selector requires an exact `metadata.name` is authorized as that
 * name). The runner therefore points the backend at a loopback proxy that adds that selector.
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

/**
 * A field selector value with the characters that separate terms escaped (k8s.io/apimachinery fields
 * `EscapeValue`). Secret names never hold them; escaping keeps a bad name one term rather than several.
 */
function escapeFieldValue(value: string): string {
  return value.replace(/[\\,=]/g, (char) => `\\${char}`);
}

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
 * Rewrites one request target (path and query, as a client sends it) for the proxy: a GET or HEAD that lists
 * the Secret collection of the scope's namespace (`/api/v1/namespaces/<ns>/secrets`, not a watch) gets
 * `fieldSelector=metadata.name=<secretName>`, ANDed with the request's own field selector. Ours comes first:
 * the API server authorizes as the first exact `metadata.name` term it finds (`RequiresExactMatch`), and
 * only the first `fieldSelector` parameter counts, so later ones are dropped. Every other target (a named
 * get, a watch, another resource or namespace, another method) is returned unchanged. Pure.
 */
export function rewriteTarget(method: string, target: string, scope: StateSecretScope): string {
  if (method !== 'GET' && method !== 'HEAD') return target;
  const url = new URL(target, 'http://proxy.invalid');
  const collection = `/api/v1/namespaces/${encodeURIComponent(scope.namespace)}/secrets`;
  // The API server splits the path on `/` after trimming them, so a trailing slash names the same collection.
  if (url.pathname !== collection && url.pathname !== `${collection}/`) return target;
  if (isWatch(url.searchParams)) return target;
  const own = `metadata.name=${escapeFieldValue(scope.secretName)}`;
  const existing = url.searchParams.get('fieldSelector');
  url.searchParams.delete('fieldSelector');
  url.searchParams.append('fieldSelector', existing ? `${own},${existing}` : own);
  return `${url.pathname}${url.search}`;
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
