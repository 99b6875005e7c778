import { z } from 'zod';

/**
 * The CloudEvents the Knative ApiServerSource (and our bundled relay) sends to `POST /events`
 * (DESIGN.md section 13; notes SERVERLESS-FACTS section 1.1). The payload is only a hint: the step reads
 * live state, so these schemas keep just what routing needs.
 */

/** The six ApiServerSource event types: `ref` (Reference mode, the default) and `resource` (Resource mode). */
export const API_SERVER_EVENT_TYPES = [
  'dev.knative.apiserver.resource.add',
  'dev.knative.apiserver.resource.update',
  'dev.knative.apiserver.resource.delete',
  'dev.knative.apiserver.ref.add',
  'dev.knative.apiserver.ref.update',
  'dev.knative.apiserver.ref.delete',
] as const;
export const ApiServerEventTypeSchema = z.enum(API_SERVER_EVENT_TYPES);
export type ApiServerEventType = z.infer<typeof ApiServerEventTypeSchema>;

/** The delivery mode an event type belongs to. */
export type ApiServerMode = 'ref' | 'resource';
/** The watch verb an event type reports. */
export type ApiServerVerb = 'add' | 'update' | 'delete';

/** Splits an event type into its mode and verb. */
export function describeEventType(type: ApiServerEventType): { mode: ApiServerMode; verb: ApiServerVerb } {
  const [mode, verb] = type.slice('dev.knative.apiserver.'.length).split('.') as [
    ApiServerMode,
    ApiServerVerb,
  ];
  return { mode, verb };
}

/** Builds the event type of a mode and verb (the relay's side of describeEventType). */
export function eventTypeOf(mode: ApiServerMode, verb: ApiServerVerb): ApiServerEventType {
  return `dev.knative.apiserver.${mode}.${verb}`;
}

/**
 * The required CloudEvents 1.0 context attributes. The SDK's HTTP parser is lenient (it invents a missing
 * `id` and does not insist on `source`), so these are checked first, from the `ce-*` headers in binary mode
 * or the body in structured mode.
 */
export const CloudEventAttributesSchema = z.object({
  specversion: z.literal('1.0', { error: 'must be "1.0"' }),
  id: z.string({ error: 'is required' }).min(1, 'is required').max(256),
  source: z.string({ error: 'is required' }).min(1, 'is required').max(2048),
  type: z.string({ error: 'is required' }).min(1, 'is required').max(256),
});

/**
 * Kubernetes object names: DNS-1123 subdomain, at most 253 characters (rejects `../x`, unicode, spaces):
 * dot-separated labels, none empty and none starting or ending with `-` (`a..b`, `a.-b` are no names).
 */
export const ObjectNameSchema = z
  .string()
  .max(253, 'at most 253 characters')
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    'must be a DNS-1123 subdomain (a-z, 0-9, "-", ".")',
  );

/** Kubernetes namespace names: DNS-1123 label, at most 63 characters. */
export const NamespaceSchema = z
  .string()
  .max(63, 'at most 63 characters')
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS-1123 label (a-z, 0-9, "-")');

const ApiVersionSchema = z
  .string()
  .max(253)
  .regex(/^([a-z0-9.-]+\/)?v[0-9a-z]+$/, 'must look like group/version or version');
const KindSchema = z
  .string()
  .max(63)
  .regex(/^[A-Z][A-Za-z0-9]*$/, 'must be a CamelCase kind');

/** Reference mode data: exactly a `corev1.ObjectReference` with these four fields (no uid, no resourceVersion). */
export const RefDataSchema = z.object({
  apiVersion: ApiVersionSchema,
  kind: KindSchema,
  name: ObjectNameSchema,
  namespace: NamespaceSchema,
});

const OwnerReferenceSchema = z.object({
  apiVersion: z.string().max(253),
  kind: KindSchema,
  name: ObjectNameSchema,
});

/** Resource mode data: the whole object; only the fields routing and dedupe need are kept. */
export const ResourceDataSchema = z.object({
  apiVersion: ApiVersionSchema,
  kind: KindSchema,
  metadata: z.object({
    name: ObjectNameSchema,
    namespace: NamespaceSchema,
    uid: z.string().max(64).optional(),
    resourceVersion: z.string().max(64).optional(),
    labels: z.record(z.string().max(317), z.string().max(63)).optional(),
    ownerReferences: z.array(OwnerReferenceSchema).max(64).optional(),
    deletionTimestamp: z.string().max(64).optional(),
    finalizers: z.array(z.string().max(317)).max(64).optional(),
  }),
});

/**
 * What `POST /events` keeps of one event, whatever its mode: the object it names, and in resource mode the
 * labels, owner references, uid and resourceVersion (for dedupe, DESIGN.md section 8), and whether it is
 * being deleted and with which finalizers (a pod held by ours, section 7).
 */
export interface EventSubject {
  mode: ApiServerMode;
  verb: ApiServerVerb;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** Resource mode only. */
  labels?: Record<string, string>;
  /** Resource mode only. */
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string }>;
  /** Resource mode only; `uid@resourceVersion` is the dedupe key. */
  uid?: string;
  resourceVersion?: string;
  /** Resource mode only. */
  deletionTimestamp?: string;
  /** Resource mode only. */
  finalizers?: string[];
  /**
   * Resource mode only: the whole object as sent, unchecked; read only through the schemas below (a Job
   * or pod) or as a digest (src/core/event-relevance.ts).
   */
  object?: unknown;
}

/** A data parse: the subject, or the zod issues as `path: message` lines. */
export type SubjectParse = { ok: true; subject: EventSubject } | { ok: false; message: string };

/** Validates an event's data against its mode's schema and flattens it into an EventSubject. */
export function parseEventData(type: ApiServerEventType, data: unknown): SubjectParse {
  const { mode, verb } = describeEventType(type);
  if (mode === 'ref') {
    const parsed = RefDataSchema.safeParse(data);
    if (!parsed.success) return { ok: false, message: formatIssues(parsed.error) };
    return { ok: true, subject: { mode, verb, ...parsed.data } };
  }
  const parsed = ResourceDataSchema.safeParse(data);
  if (!parsed.success) return { ok: false, message: formatIssues(parsed.error) };
  const { apiVersion, kind, metadata } = parsed.data;
  return {
    ok: true,
    subject: {
      mode,
      verb,
      apiVersion,
      kind,
      namespace: metadata.namespace,
      name: metadata.name,
      ...(metadata.labels === undefined ? {} : { labels: metadata.labels }),
      ...(metadata.ownerReferences === undefined ? {} : { ownerReferences: metadata.ownerReferences }),
      ...(metadata.uid === undefined ? {} : { uid: metadata.uid }),
      ...(metadata.resourceVersion === undefined ? {} : { resourceVersion: metadata.resourceVersion }),
      ...(metadata.deletionTimestamp === undefined ? {} : { deletionTimestamp: metadata.deletionTimestamp }),
      ...(metadata.finalizers === undefined ? {} : { finalizers: metadata.finalizers }),
      object: data,
    },
  };
}

const WaitingSchema = z.object({ reason: z.string().max(256).optional() });
const ContainerStatusSchema = z.looseObject({
  name: z.string().max(253),
  state: z.looseObject({ waiting: WaitingSchema.optional() }).optional(),
});

/**
 * What an event's copy of a Job says about its end (src/core/event-relevance.ts `jobEventVerdict`); a copy
 * that does not parse is judged by a step instead.
 */
export const EventJobSchema = z.looseObject({
  metadata: z.looseObject({
    name: ObjectNameSchema,
    annotations: z.record(z.string().max(317), z.string()).optional(),
    deletionTimestamp: z.string().max(64).optional(),
  }),
  status: z
    .looseObject({
      conditions: z
        .array(z.looseObject({ type: z.string().max(316), status: z.string().max(16) }))
        .max(64)
        .optional(),
    })
    .optional(),
});

/** What an event's copy of a pod says (src/core/event-relevance.ts `podEventVerdict`). */
export const EventPodSchema = z.looseObject({
  metadata: z.looseObject({
    name: ObjectNameSchema,
    labels: z.record(z.string().max(317), z.string().max(63)).optional(),
    deletionTimestamp: z.string().max(64).optional(),
    finalizers: z.array(z.string().max(317)).max(64).optional(),
  }),
  status: z
    .looseObject({
      containerStatuses: z.array(ContainerStatusSchema).max(64).optional(),
      initContainerStatuses: z.array(ContainerStatusSchema).max(64).optional(),
    })
    .optional(),
});

/**
 * Renders zod issues as `data.path: message` lines; values are never echoed (they may be hostile or secret).
 * Keys are input too: a record key in a path (a label) or an unrecognized key is shown only when it is
 * plain, as zod's own messages would quote it whole.
 */
export function formatIssues(error: z.ZodError, root = 'data'): string {
  return error.issues
    .map((issue) => {
      const path = [root, ...issue.path.map((segment) => shownKey(String(segment)))].join('.');
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown key${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => (PLAIN_KEY.test(k) ? `"${k}"` : NOT_SHOWN)).join(', ')}`
          : issue.message;
      return `${path}: ${message}`;
    })
    .join('; ');
}

/** A key shown in a message as it is: short, and letters, digits, `.`, `_`, `-` and `/` only. */
const PLAIN_KEY = /^[A-Za-z0-9._/-]{1,64}$/;
const NOT_SHOWN = '(key not shown)';

function shownKey(key: string): string {
  return PLAIN_KEY.test(key) ? key : NOT_SHOWN;
}
