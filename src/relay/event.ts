import { CloudEvent, HTTP } from 'cloudevents';
import { type ApiServerMode, type ApiServerVerb, eventTypeOf } from '../schemas/cloudevents.ts';
import type { RelayResource } from './resources.ts';

/**
 * Builds the CloudEvent the Knative ApiServerSource would send for one watch event (notes
 * SERVERLESS-FACTS section 1.1), in binary mode, so `/events` has one input path whether Knative or the
 * bundled relay delivers. Pure apart from the fresh `id` and `time`, which the caller passes.
 */

/** The parts of a Kubernetes object the relay reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** An HTTP message: headers plus body text. */
export interface RelayMessage {
  headers: Record<string, string>;
  body: string;
}

export interface EventInput {
  mode: ApiServerMode;
  verb: ApiServerVerb;
  resource: RelayResource;
  object: KubeObject;
  /** The API server URL, as ApiServerSource sets `source`. */
  source: string;
  id: string;
  time: Date;
}

/**
 * Returns the binary-mode message. Resource mode carries the object; the relay sends the Secrets it
 * watches in reference mode only (./resources.ts `referenceOnly`).
 */
export function buildEventMessage(input: EventInput): RelayMessage {
  const name = input.object.metadata?.name ?? '';
  const namespace = input.object.metadata?.namespace ?? '';
  const apiVersion = input.object.apiVersion ?? input.resource.apiVersion;
  const kind = input.object.kind ?? input.resource.kind;
  const data =
    input.mode === 'ref' ? { apiVersion, kind, name, namespace } : { ...input.object, apiVersion, kind };
  const event = new CloudEvent<unknown>({
    specversion: '1.0',
    id: input.id,
    source: input.source,
    type: eventTypeOf(input.mode, input.verb),
    subject: `/apis/${apiVersion}/namespaces/${namespace}/${input.resource.plural}/${name}`,
    time: input.time.toISOString(),
    datacontenttype: 'application/json',
    kind,
    apiversion: apiVersion,
    name,
    namespace,
    data,
  });
  const message = HTTP.binary(event);
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(message.headers)) {
    if (typeof value === 'string') headers[key.toLowerCase()] = value;
  }
  return { headers, body: typeof message.body === 'string' ? message.body : JSON.stringify(message.body) };
}
