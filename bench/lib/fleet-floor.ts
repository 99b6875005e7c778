import { KubeConfig, KubernetesObjectApi, Watch } from '@kubernetes/client-node';
import { LABELS, POD_RESULT_FINALIZER } from '../../src/core/job-labels.ts';

/**
 * The floor of the fleet bench's convergence: a bare client creating the same Jobs directly. While the
 * controller converges a namespace, every object it creates there for a run is captured as first created
 * (the runner identity's ServiceAccount, Role and RoleBinding, the empty state Secret and lock Lease, the
 * Job, the per-run Secret). The floor then creates the same objects in a fresh namespace, all at once,
 * with nothing else: no reads, no status writes, no leases, no ordering between a cluster and its
 * machines. What differs from the captured objects, and why:
 * - the namespace name (everywhere it appears, inside Secret data too: the run config's backend names it);
 * - server-set fields and owner references are dropped (the per-run Secret is owned by its new Job, so
 *   the garbage collector still removes it);
 * - the Job and its pods lose `captf.io/managed` (the relay would deliver them to the controller) and the
 *   pods the `captf.io/result` finalizer (no controller releases it here);
 * - the Job's selector and the labels the Job controller derives from it are left to the API server.
 */

/** Plurals captured, with the API path prefix of each. */
const CAPTURED = [
  { plural: 'serviceaccounts', prefix: '/api/v1' },
  { plural: 'roles', prefix: '/apis/rbac.authorization.k8s.io/v1' },
  { plural: 'secrets', prefix: '/api/v1' },
  { plural: 'leases', prefix: '/apis/coordination.k8s.io/v1' },
  { plural: 'rolebindings', prefix: '/apis/rbac.authorization.k8s.io/v1' },
  { plural: 'jobs', prefix: '/apis/batch/v1' },
] as const;

interface Captured {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion?: string; kind: string; name: string; uid?: string }[];
  };
  [field: string]: unknown;
}

/** Objects captured in one namespace, each as first seen. */
export interface Capture {
  objects: Captured[];
  stop(): void;
}

/** Starts capturing what is created in `namespace` (call before the objects are created). */
export async function captureRunObjects(kubeconfigPath: string, namespace: string): Promise<Capture> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const watch = new Watch(config);
  const seen = new Set<string>();
  const objects: Captured[] = [];
  const requests = await Promise.all(
    CAPTURED.map(({ plural, prefix }) =>
      watch.watch(
        `${prefix}/namespaces/${namespace}/${plural}`,
        {},
        (phase: string, object: Captured) => {
          const key = `${object.kind}/${object.metadata.name}`;
          if (phase !== 'ADDED' || seen.has(key)) return;
          // Only what a run needs: the default ServiceAccount, Events and the like are not the controller's.
          if (object.kind === 'ServiceAccount' && object.metadata.name === 'default') return;
          seen.add(key);
          objects.push(object);
        },
        () => undefined,
      ),
    ),
  );
  return {
    objects,
    stop: () => {
      for (const request of requests) request.abort();
    },
  };
}

/** The order the controller creates a run's objects in (src/step/start-job.ts). */
const ORDER = ['ServiceAccount', 'Secret/state', 'Lease', 'Role', 'RoleBinding', 'Job', 'Secret/run'];

function orderOf(object: Captured): number {
  const kind =
    object.kind === 'Secret'
      ? object.metadata.ownerReferences?.some((owner) => owner.kind === 'Job')
        ? 'Secret/run'
        : 'Secret/state'
      : object.kind;
  return ORDER.indexOf(kind);
}

/** The captured object as a bare client would create it in `to` (see the module comment). */
function recreated(object: Captured, from: string, to: string): Captured {
  const { metadata, status: _status, ...rest } = object as Captured & { status?: unknown };
  const text = JSON.stringify({
    ...rest,
    metadata: {
      name: metadata.name,
      namespace: to,
      ...(metadata.labels ? { labels: metadata.labels } : {}),
      ...(metadata.annotations ? { annotations: metadata.annotations } : {}),
    },
  });
  // Namespaces are whole tokens (`"<ns>"`, `/<ns>/`, `.<ns>.`): the bench names them so no other text matches.
  const copy = JSON.parse(text.replaceAll(from, to)) as Captured;
  if (copy.kind === 'Secret' && copy.data !== undefined) {
    // The run config is JSON inside the Secret's base64 data: its backend names the namespace too.
    const data = copy.data as Record<string, string>;
    for (const [key, value] of Object.entries(data))
      data[key] = Buffer.from(
        Buffer.from(value, 'base64').toString('latin1').replaceAll(from, to),
        'latin1',
      ).toString('base64');
  }
  if (copy.kind === 'Job') {
    const spec = copy.spec as {
      selector?: unknown;
      template: { metadata?: { labels?: Record<string, string>; finalizers?: string[] } };
    };
    delete spec.selector;
    delete copy.metadata.labels?.[LABELS.managed];
    const template = spec.template.metadata ?? {};
    for (const label of Object.keys(template.labels ?? {}))
      if (label === LABELS.managed || label.includes('controller-uid') || label.endsWith('job-name'))
        delete template.labels?.[label];
    template.finalizers = (template.finalizers ?? []).filter((name) => name !== POD_RESULT_FINALIZER);
  }
  return copy;
}

/** What the floor did. */
export interface FloorRun {
  objects: number;
  jobs: number;
  requests: number;
  /** First create to the last Job Complete (or Failed), ms. */
  wallMs: number;
  failedJobs: number;
  /** The termination message of one failed pod, when a Job failed. */
  failure?: string;
}

/**
 * Creates the captured run objects of `from` in the (prepared, empty) namespace `to`, `concurrency` runs at
 * a time, each run's objects in the controller's order, and waits until every Job has finished.
 */
export async function runFloor(
  kubeconfigPath: string,
  capture: Capture,
  from: string,
  to: string,
  concurrency: number,
  timeoutMs: number,
): Promise<FloorRun> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfigPath);
  const client = KubernetesObjectApi.makeApiClient(config);
  const jobs = capture.objects.filter((object) => object.kind === 'Job');
  // Each run's objects, found from its Job: the identity carries the owner's UID label, its Role names the
  // state Secret and lock Lease, and the per-run Secret is owned by the Job.
  const groups = jobs.map((job) => {
    const uid = job.metadata.labels?.[LABELS.ownerUid];
    const identity = capture.objects.filter(
      (object) =>
        object.kind !== 'Job' && uid !== undefined && object.metadata.labels?.[LABELS.ownerUid] === uid,
    );
    const stateNames = new Set(
      identity
        .filter((object) => object.kind === 'Role')
        .flatMap((role) =>
          (role.rules as { resourceNames?: string[] }[]).flatMap((rule) => rule.resourceNames ?? []),
        ),
    );
    const members = [
      ...identity,
      ...capture.objects.filter(
        (object) =>
          (object.kind === 'Secret' || object.kind === 'Lease') &&
          (stateNames.has(object.metadata.name) ||
            object.metadata.ownerReferences?.some(
              (owner) => owner.kind === 'Job' && owner.name === job.metadata.name,
            )),
      ),
      job,
    ];
    return [...new Set(members)].sort((a, b) => orderOf(a) - orderOf(b));
  });
  const done = new Set<string>();
  let failedJobs = 0;
  const watch = new Watch(config);
  let allDone: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const watching = await watch.watch(
    `/apis/batch/v1/namespaces/${to}/jobs`,
    {},
    (
      _phase: string,
      job: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } },
    ) => {
      const condition = job.status?.conditions?.find(
        (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
      );
      if (condition === undefined || done.has(job.metadata.name)) return;
      done.add(job.metadata.name);
      if (condition.type === 'Failed') failedJobs += 1;
      // A finished pod keeps its emptyDir on the node (the runner's copy alone is 125 MB) until it
      // is deleted: the floor's Jobs go as they finish, so 2 × the fleet's pods never fill the disk.
      if (condition.type === 'Complete')
        void client
          .delete(
            { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: job.metadata.name, namespace: to } },
            undefined,
            undefined,
            undefined,
            undefined,
            'Background',
          )
          .catch(() => undefined);
      if (done.size === jobs.length) allDone();
    },
    () => undefined,
  );
  let requests = 0;
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < groups.length) {
      const group = groups[next] ?? [];
      next += 1;
      let jobUid = '';
      for (const object of group) {
        const body = recreated(object, from, to);
        if (body.kind === 'Secret' && orderOf(object) === ORDER.indexOf('Secret/run')) {
          body.metadata = {
            ...body.metadata,
            ownerReferences: [
              {
                apiVersion: 'batch/v1',
                kind: 'Job',
                name: object.metadata.ownerReferences?.[0]?.name ?? '',
                uid: jobUid,
              },
            ],
          };
        }
        requests += 1;
        const created = await client.create(body as Parameters<typeof client.create>[0]);
        if (body.kind === 'Job') jobUid = (created.metadata as { uid?: string }).uid ?? '';
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const timer = setTimeout(allDone, timeoutMs);
  await finished;
  clearTimeout(timer);
  const wallMs = performance.now() - started;
  watching.abort();
  // The watch is one more request; its list-then-watch is what any client waiting for Jobs pays.
  requests += 1;
  let failure: string | undefined;
  if (failedJobs > 0) {
    // Why, in a line: the Job's Failed condition and what its pods' containers said.
    const [jobList, podList] = (await Promise.all([
      client.list('batch/v1', 'Job', to),
      client.list('v1', 'Pod', to),
    ])) as unknown as [
      { items: { status?: { conditions?: { type: string; reason?: string; message?: string }[] } }[] },
      {
        items: {
          status?: {
            phase?: string;
            reason?: string;
            message?: string;
            containerStatuses?: { state?: Record<string, { reason?: string; message?: string }> }[];
          };
        }[];
      },
    ];
    const condition = jobList.items
      .flatMap((job) => job.status?.conditions ?? [])
      .find((c) => c.type === 'Failed');
    const pod = podList.items[0]?.status;
    failure = JSON.stringify({
      job: `${condition?.reason}: ${condition?.message}`,
      pod: pod ? `${pod.phase} ${pod.reason ?? ''} ${pod.message ?? ''}` : 'none',
      containers: pod?.containerStatuses?.map((c) => c.state),
    }).slice(0, 600);
  }
  return {
    ...(failure === undefined ? {} : { failure }),
    objects: groups.reduce((sum, group) => sum + group.length, 0),
    jobs: done.size < jobs.length ? Number.NaN : jobs.length,
    requests,
    wallMs: done.size < jobs.length ? Number.NaN : wallMs,
    failedJobs,
  };
}
