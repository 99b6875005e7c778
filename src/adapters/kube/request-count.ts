import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts the HTTP requests the Kubernetes adapter sends, by verb and resource (issue 4: "a step's API
 * requests are counted"). Counting happens on the wire (a client middleware), so list pages, retries of the
 * caller and failed requests all count: the number is what the API server actually served.
 */

/** Kubernetes API verbs, as the API server's audit log names them. */
export const KUBE_VERBS = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
] as const;
export type KubeVerb = (typeof KUBE_VERBS)[number];

/** One request's identity: verb and resource (`jobs`, `pods`, `terraformmachines/status`). */
export interface RequestKey {
  verb: KubeVerb;
  /** Plural resource, with `/subresource` appended when there is one. */
  resource: string;
}

/**
 * Reads the verb and resource of an API request from its method and URL (pure). Paths follow the API
 * server's layout: `/api/v1[/namespaces/<ns>]/<resource>[/<name>[/<sub>]]` and
 * `/apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<sub>]]`.
 */
export function requestKeyOf(method: string, url: string): RequestKey {
  const parsed = new URL(url, 'http://placeholder');
  const segments = parsed.pathname.split('/').filter((part) => part !== '');
  const afterVersion = segments[0] === 'api' ? segments.slice(2) : segments.slice(3);
  // `/namespaces/<ns>/<resource>…` is a namespaced path; `/namespaces[/<ns>]` alone is the Namespace itself.
  const rest =
    afterVersion[0] === 'namespaces' && afterVersion.length >= 3 ? afterVersion.slice(2) : afterVersion;
  const [resource = 'unknown', name, subresource] = rest;
  const label = subresource === undefined ? resource : `${resource}/${subresource}`;
  return {
    verb: verbOf(method.toUpperCase(), name !== undefined, parsed.searchParams.get('watch') === 'true'),
    resource: label,
  };
}

function verbOf(method: string, named: boolean, watch: boolean): KubeVerb {
  switch (method) {
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      if (watch) return 'watch';
      return named ? 'get' : 'list';
  }
}

/** Request counts since the last reset: the total and one entry per `"<verb> <resource>"`. */
export interface RequestCounts {
  total: number;
  byRequest: Record<string, number>;
}

/** What `RequestCounter.measure` answers: the run's value and the requests sent on its behalf. */
export interface Measured<T> {
  value: T;
  /** Requests sent by the run and by everything it awaited, concurrent runs excluded. */
  requests: number;
  /** Of those, the reads (`get`, `list`): what a look that changes nothing costs. */
  reads: number;
}

/** A mutable tally of requests; one per adapter instance. */
export class RequestCounter {
  #counts = new Map<string, number>();
  #total = 0;
  // The tally of the run a request belongs to: async context follows the awaits of one step, so steps that
  // run at the same time in one process are told apart (a before/after difference of the totals is not).
  #runs = new AsyncLocalStorage<{ requests: number; reads: number }>();

  /** Records one request. */
  record(key: RequestKey): void {
    const label = `${key.verb} ${key.resource}`;
    this.#counts.set(label, (this.#counts.get(label) ?? 0) + 1);
    this.#total += 1;
    const run = this.#runs.getStore();
    if (run === undefined) return;
    run.requests += 1;
    if (key.verb === 'get' || key.verb === 'list') run.reads += 1;
  }

  /**
   * Runs `run` and counts the requests it sends (one step's API cost, for its log line). A run nested in
   * another counts in the inner tally only. Rethrows what `run` throws.
   */
  async measure<T>(run: () => Promise<T>): Promise<Measured<T>> {
    const tally = { requests: 0, reads: 0 };
    const value = await this.#runs.run(tally, run);
    return { value, ...tally };
  }

  /** The counts so far, as a plain object with sorted keys. */
  snapshot(): RequestCounts {
    const byRequest: Record<string, number> = {};
    for (const label of [...this.#counts.keys()].sort()) byRequest[label] = this.#counts.get(label) ?? 0;
    return { total: this.#total, byRequest };
  }

  /** Returns the counts so far and starts again from zero (one step's share: reset, run, take). */
  take(): RequestCounts {
    const counts = this.snapshot();
    this.#counts.clear();
    this.#total = 0;
    return counts;
  }
}
