import type { InjectOptions } from 'fastify';
import { BENCH_TOKEN } from './app-deps.ts';
import { API_VERSION, MACHINE_NAME, machineObject, NAMESPACE } from './objects.ts';

/**
 * `POST /events` requests as Knative's ApiServerSource sends them (DESIGN.md section 13), for `app.inject`.
 * Every builder takes the request index: CloudEvent ids are new on every delivery, and resource-mode
 * events carry the object's uid and resourceVersion, which the dedupe keys on.
 */

const SOURCE = 'https://10.96.0.1:443';
const authorization = `Bearer ${BENCH_TOKEN}`;

/** Binary mode, reference event: `ce-*` headers and `{apiVersion, kind, name, namespace}` as the body. */
export function binaryRefEvent(index: number): InjectOptions {
  return {
    method: 'POST',
    url: '/events',
    headers: {
      authorization,
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': `ref-${index}`,
      'ce-source': SOURCE,
      'ce-type': 'dev.knative.apiserver.ref.update',
    },
    payload: JSON.stringify({
      apiVersion: API_VERSION,
      kind: 'TerraformMachine',
      name: MACHINE_NAME,
      namespace: NAMESPACE,
    }),
  };
}

/**
 * Structured mode, resource event: the whole TerraformMachine (about `objectBytes` of JSON) in `data`.
 * The body is built once and only its id, uid and resourceVersion change per request, so building a
 * request costs a string replace, not a 20 KB JSON.stringify inside the timed call.
 */
export function structuredResourceEvents(
  objectBytes: number,
): (index: number, uid?: string) => InjectOptions {
  const template = JSON.stringify({
    specversion: '1.0',
    id: '__ID__',
    source: SOURCE,
    type: 'dev.knative.apiserver.resource.update',
    datacontenttype: 'application/json',
    data: machineObject({ uid: '__UID__', resourceVersion: '__RV__', targetBytes: objectBytes }),
  });
  return (index, uid = 'u-bench') => ({
    method: 'POST',
    url: '/events',
    headers: { authorization, 'content-type': 'application/cloudevents+json' },
    payload: template
      .replace('__ID__', `res-${index}`)
      .replace('__UID__', uid)
      .replace('__RV__', String(index)),
  });
}

/** A binary-mode event whose data is cut off mid-JSON: answered 400 `invalid-event`. */
export function malformedEvent(index: number): InjectOptions {
  const request = binaryRefEvent(index);
  return {
    ...request,
    payload: '{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1","kind":"Terraform',
  };
}
