import {
  AuthenticationV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  EventsV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type RequestContext,
  type ResponseContext,
  ServerConfiguration,
} from '@kubernetes/client-node';
import { type RequestCounter, requestKeyOf } from './request-count.ts';

/** Where the adapter finds its credentials. */
export type KubeConfigSource =
  /** A kubeconfig file (local run, tests). */
  | { kind: 'file'; path: string }
  /** The pod's service account (in-cluster deployment). */
  | { kind: 'in-cluster' }
  /** An already loaded config. */
  | { kind: 'loaded'; config: KubeConfig };

/** Loads a KubeConfig from its source; throws when the file is missing or names no current cluster. */
export function loadKubeConfig(source: KubeConfigSource): KubeConfig {
  if (source.kind === 'loaded') return source.config;
  const config = new KubeConfig();
  if (source.kind === 'file') config.loadFromFile(source.path);
  else config.loadFromCluster();
  if (!config.getCurrentCluster()) throw new Error('load kubeconfig: no current cluster');
  return config;
}

/** The generated API groups the adapter uses, all sharing one configuration. */
export interface KubeApis {
  core: CoreV1Api;
  batch: BatchV1Api;
  custom: CustomObjectsApi;
  events: EventsV1Api;
  authentication: AuthenticationV1Api;
  rbac: RbacAuthorizationV1Api;
  coordination: CoordinationV1Api;
}

/**
 * Builds the API clients with one middleware on every request that counts it and arms a per-request
 * timeout (an abort signal, which client-node 2.x passes to undici's fetch and which also covers reading
 * the body). Built like `KubeConfig.makeApiClient`, which offers no way to add middleware. One middleware,
 * not two: the generated client reverses its middleware array in place on every response, so the order
 * of several would alternate between calls.
 */
export function makeKubeApis(
  config: KubeConfig,
  options: {
    requestTimeoutMs: number;
    counter: RequestCounter;
    /**
     * Headers sent with every request: `kubectl captf --as` impersonates with `Impersonate-User` and
     * `Impersonate-Group`, as kubectl does (the API server checks the caller may impersonate).
     */
    headers?: Readonly<Record<string, string>>;
  },
): KubeApis {
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('make Kubernetes clients: no current cluster');
  // client-node 2.0.1's KubeConfig builds a new undici Agent for every request when the cluster has TLS
  // settings (applySecurityAuthentication → createDispatcher): each request then opens its own TLS
  // connection, kept alive and never reused, so memory grows with the request rate and every call pays a
  // handshake. The first Agent it builds serves every later request of this configuration (same CA and
  // client certificate; tokens travel in headers, which the auth step still sets per request).
  let sharedDispatcher: ReturnType<RequestContext['getDispatcher']>;
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: config },
    promiseMiddleware: [
      {
        pre: async (context: RequestContext): Promise<RequestContext> => {
          const ownDispatcher = context.getDispatcher();
          if (ownDispatcher !== undefined) {
            sharedDispatcher ??= ownDispatcher;
            context.setDispatcher(sharedDispatcher);
          }
          for (const [name, value] of Object.entries(options.headers ?? {}))
            context.setHeaderParam(name, value);
          options.counter.record(requestKeyOf(context.getHttpMethod(), context.getUrl()));
          context.setSignal(AbortSignal.timeout(options.requestTimeoutMs));
          return context;
        },
        post: async (context: ResponseContext): Promise<ResponseContext> => context,
      },
    ],
  });
  return {
    core: new CoreV1Api(configuration),
    batch: new BatchV1Api(configuration),
    custom: new CustomObjectsApi(configuration),
    events: new EventsV1Api(configuration),
    authentication: new AuthenticationV1Api(configuration),
    rbac: new RbacAuthorizationV1Api(configuration),
    coordination: new CoordinationV1Api(configuration),
  };
}
