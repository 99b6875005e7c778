import {
  AuthenticationV1Api,
  BatchV1Api,
  type Cluster,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  EventsV1Api,
  type HttpLibrary,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  KubeConfig,
  RbacAuthorizationV1Api,
  RequestContext,
  type ResponseBody,
  type ResponseContext,
  type SecurityAuthentication,
  ServerConfiguration,
  type User,
  wrapHttpLibrary,
} from '@kubernetes/client-node';
import type { KubeConfigSource } from './config-source.ts';
import { type RequestCounter, requestKeyOf } from './request-count.ts';

export type { KubeConfigSource } from './config-source.ts';

/**
 * Loads a KubeConfig from its source; throws when the file is missing, the content does not parse, or it
 * names no current cluster.
 */
export function loadKubeConfig(source: KubeConfigSource): KubeConfig {
  if (source.kind === 'loaded') return source.config;
  const config = new KubeConfig();
  if (source.kind === 'file') config.loadFromFile(source.path);
  else if (source.kind === 'content') config.loadFromString(source.content);
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

/** The dispatcher client-node builds from a cluster's TLS settings (undici's, as RequestContext names it). */
type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/**
 * The kubeconfig's authentication with its TLS part built once per connection. client-node 2.0.1's
 * `KubeConfig.applySecurityAuthentication` reads the CA, client certificate and key files (readFileSync) and
 * builds a new undici Agent on every request (the step profile, bench/step-profile.bench.ts: 3-6 % of a
 * step's CPU), and an Agent per request would also open a TLS connection per request. Here one KubeConfig
 * holds only the TLS settings (cluster CA, server name, proxy, client certificate and key, and an exec
 * plugin, which may answer a certificate): it builds the Agent on the first request, and every request
 * reuses it. A second holds everything but the TLS files and sets the per-request headers: the bearer token
 * (a projected ServiceAccount token file is still re-read by client-node's FileAuth every 60 s, so rotation
 * keeps working), exec and OIDC credentials, basic auth and `Impersonate-User`. A new CA or client
 * certificate needs a new connection (a new process); the previous middleware already kept the first
 * Agent for good.
 */
class TlsOnceAuthentication implements SecurityAuthentication {
  readonly #tls: KubeConfig;
  readonly #headers: KubeConfig;
  readonly #server: string;
  #dispatcher: Promise<Dispatcher | undefined> | undefined;

  constructor(cluster: Cluster, user: User) {
    this.#server = cluster.server;
    this.#tls = new KubeConfig();
    this.#tls.loadFromClusterAndUser(cluster, {
      name: user.name,
      certFile: user.certFile,
      certData: user.certData,
      keyFile: user.keyFile,
      keyData: user.keyData,
      // An exec plugin may answer a client certificate (ExecCredential clientCertificateData): it runs here
      // once more, and its first certificate serves the connection, as the shared first Agent did before.
      ...(user.exec !== undefined ? { exec: user.exec } : {}),
    });
    this.#headers = new KubeConfig();
    this.#headers.loadFromClusterAndUser(
      // Its server is never contacted; client-node refuses a plain-http one without skipTLSVerify, which
      // on an https server would make it build an Agent per request again.
      {
        name: cluster.name,
        server: cluster.server,
        skipTLSVerify: cluster.server.startsWith('http:') ? cluster.skipTLSVerify : false,
      },
      { ...user, certFile: undefined, certData: undefined, keyFile: undefined, keyData: undefined },
    );
  }

  getName(): string {
    return 'kubeconfig authentication, TLS settings built once';
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    this.#dispatcher ??= this.#buildDispatcher();
    await this.#headers.applySecurityAuthentication(context);
    const dispatcher = await this.#dispatcher;
    if (dispatcher !== undefined) context.setDispatcher(dispatcher);
  }

  /** The Agent client-node builds for these TLS settings (undefined when there are none); a failure is retried. */
  async #buildDispatcher(): Promise<Dispatcher | undefined> {
    const probe = new RequestContext(this.#server, HttpMethod.GET);
    try {
      await this.#tls.applySecurityAuthentication(probe);
    } catch (error) {
      // An unreadable CA file fails this request, as before, and the next request reads it again.
      this.#dispatcher = undefined;
      throw error;
    }
    return probe.getDispatcher();
  }
}

/**
 * client-node's fetch with a per-request timeout: an AbortController whose timer (`timeoutMs`) is cleared
 * once the answer's body has been read or the request failed. The signal also covers reading the body,
 * which client-node does after the middleware. `AbortSignal.timeout` kept a timer alive for the whole
 * timeout after every request (the step profile: about 2 % of a step's CPU). The abort reason is a
 * `TimeoutError`, as `AbortSignal.timeout`'s, which errors.ts maps to `Timeout`.
 */
function fetchWithTimeout(timeoutMs: number): HttpLibrary {
  const fetchLibrary = new IsomorphicFetchHttpLibrary();
  return wrapHttpLibrary({
    async send(request: RequestContext): Promise<ResponseContext> {
      const controller = new AbortController();
      const timer = setTimeout(
        () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
        timeoutMs,
      );
      // Like AbortSignal.timeout's: a body nobody reads never holds a stopping process open.
      timer.unref();
      request.setSignal(controller.signal);
      let response: ResponseContext;
      try {
        response = await fetchLibrary.send(request).toPromise();
      } catch (error) {
        clearTimeout(timer);
        throw error;
      }
      const body = response.body;
      const settled = <T>(read: Promise<T>): Promise<T> => read.finally(() => clearTimeout(timer));
      const timed: ResponseBody = {
        text: () => settled(body.text()),
        binary: () => settled(body.binary()),
        // A stream is read by the caller at its own pace: the timeout keeps covering it.
        stream: () => body.stream(),
      };
      response.body = timed;
      return response;
    },
  });
}

/**
 * Builds the API clients with one middleware on every request that counts it (and sets the caller's
 * headers), a per-request timeout (fetchWithTimeout) and the kubeconfig's authentication with its TLS part
 * built once (TlsOnceAuthentication). Built like `KubeConfig.makeApiClient`, which offers no way to add
 * middleware. One middleware, not two: the generated client reverses its middleware array in place on
 * every response, so the order of several would alternate between calls.
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
  const user = config.getCurrentUser();
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    // A kubeconfig without a user sends no credential; its cluster's CA is still used (client-node alone
    // would skip every TLS setting then and trust the system CAs).
    authMethods: { default: new TlsOnceAuthentication(cluster, user ?? { name: 'none' }) },
    httpApi: fetchWithTimeout(options.requestTimeoutMs),
    promiseMiddleware: [
      {
        pre: async (context: RequestContext): Promise<RequestContext> => {
          for (const [name, value] of Object.entries(options.headers ?? {}))
            context.setHeaderParam(name, value);
          options.counter.record(requestKeyOf(context.getHttpMethod(), context.getUrl()));
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
