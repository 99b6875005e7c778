import type { Clock } from '../clock.ts';
import { type KubeConfigSource, loadKubeConfig, makeKubeApis } from './connection.ts';
import { ApiKubeReader, DEFAULT_PAGE_SIZE, type KubeReader } from './reader.ts';
import { type Measured, RequestCounter, type RequestCounts } from './request-count.ts';
import { ApiTokenReviewer, type KubeTokenReviewer } from './token-review.ts';
import { ApiKubeWriter, type EventReporter, type KubeWriter } from './writer.ts';

/**
 * The Kubernetes adapter: a reader and a writer kept apart (so a step's needs are explicit and a dry run can
 * be handed the reader alone) sharing one connection, one request timeout and one request counter.
 */
export interface KubeAdapter {
  reader: KubeReader;
  writer: KubeWriter;
  /** TokenReviews: who a bearer token sent to our handlers belongs to (src/http/auth.ts). */
  tokenReviews: KubeTokenReviewer;
  /** Requests sent (on the wire, list pages included) since creation or the last `takeRequestCounts()`. */
  requestCounts(): RequestCounts;
  /** Returns the counts and resets them to zero. */
  takeRequestCounts(): RequestCounts;
  /** Runs `run` and counts the requests it sends, concurrent runs excluded (RequestCounter.measure). */
  measureRequests<T>(run: () => Promise<T>): Promise<Measured<T>>;
}

export interface KubeAdapterOptions {
  source: KubeConfigSource;
  clock: Clock;
  reporter: EventReporter;
  /** Budget of one HTTP request, body included; a request over it fails with code `Timeout`. Default 10 s. */
  requestTimeoutMs?: number;
  /** `limit` of each list page. Default 500. */
  pageSize?: number;
}

/** Default per-request budget: well below a step's HTTP budget, well above a healthy API server's p99. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** Builds the adapter. Throws when the kubeconfig cannot be loaded. */
export function createKubeAdapter(options: KubeAdapterOptions): KubeAdapter {
  const counter = new RequestCounter();
  const apis = makeKubeApis(loadKubeConfig(options.source), {
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    counter,
  });
  return {
    reader: new ApiKubeReader(apis, { pageSize: options.pageSize ?? DEFAULT_PAGE_SIZE }),
    writer: new ApiKubeWriter(apis, { reporter: options.reporter, clock: options.clock }),
    tokenReviews: new ApiTokenReviewer(apis),
    requestCounts: () => counter.snapshot(),
    takeRequestCounts: () => counter.take(),
    measureRequests: (run) => counter.measure(run),
  };
}
