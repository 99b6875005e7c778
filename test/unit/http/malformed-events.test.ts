import { expect, it } from 'vitest';
import { auth, binaryHeaders, testApp } from './in-memory.ts';

const GROUP_VERSION = 'infrastructure.cluster.x-k8s.io/v1alpha1';
const goodRef = { apiVersion: GROUP_VERSION, kind: 'TerraformCluster', name: 'c1', namespace: 'team-a' };
const REF_ADD = 'dev.knative.apiserver.ref.add';

function without(headers: Record<string, string>, name: string): Record<string, string> {
  const { [name]: _dropped, ...rest } = headers;
  return rest;
}

/** Each row: what is sent, the status and error code expected, and a phrase the message must contain. */
const corpus = [
  {
    id: 'M01',
    name: 'no CloudEvent headers at all',
    headers: { ...auth, 'content-type': 'application/json' },
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'invalid-event',
    says: 'no cloud event',
  },
  {
    id: 'M02',
    name: 'missing ce-id',
    headers: without(binaryHeaders(REF_ADD), 'ce-id'),
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M03',
    name: 'missing ce-source',
    headers: without(binaryHeaders(REF_ADD), 'ce-source'),
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M04',
    name: 'missing ce-type',
    headers: without(binaryHeaders(REF_ADD), 'ce-type'),
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M05',
    name: 'specversion 0.3',
    headers: binaryHeaders(REF_ADD, { 'ce-specversion': '0.3' }),
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'invalid-event',
    says: 'specversion',
  },
  {
    id: 'M06',
    name: 'specversion 2.0',
    headers: binaryHeaders(REF_ADD, { 'ce-specversion': '2.0' }),
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M07',
    name: 'type from another source',
    headers: binaryHeaders('dev.knative.sources.ping'),
    payload: JSON.stringify(goodRef),
    status: 400,
    code: 'unsupported-event-type',
    says: 'type must be',
  },
  {
    id: 'M08',
    name: 'non-JSON data with a JSON content type',
    headers: binaryHeaders(REF_ADD),
    payload: '{not json',
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M09',
    name: 'non-JSON data as text/plain',
    headers: binaryHeaders(REF_ADD, { 'content-type': 'text/plain' }),
    payload: 'hello',
    status: 400,
    code: 'invalid-event',
    says: 'data is not JSON',
  },
  {
    id: 'M10',
    name: 'empty body',
    headers: binaryHeaders(REF_ADD),
    payload: '',
    status: 400,
    code: 'invalid-event',
    says: 'data is missing',
  },
  {
    id: 'M11',
    name: 'structured body that is not JSON',
    headers: { ...auth, 'content-type': 'application/cloudevents+json' },
    payload: '<xml/>',
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M12',
    name: 'batched events',
    headers: { ...auth, 'content-type': 'application/cloudevents-batch+json' },
    payload: JSON.stringify([{ specversion: '1.0', id: '1', source: 's', type: REF_ADD, data: goodRef }]),
    status: 400,
    code: 'invalid-event',
    says: 'batched',
  },
  {
    id: 'M13',
    name: 'unknown kind',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, apiVersion: 'apps/v1', kind: 'Deployment' }),
    status: 400,
    code: 'unsupported-event-kind',
    says: 'unknown kind Deployment',
  },
  {
    id: 'M14',
    name: 'hostile name ../x',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, name: '../x' }),
    status: 400,
    code: 'invalid-event',
    says: 'data.name',
  },
  {
    id: 'M15',
    name: 'hostile namespace with a slash',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, namespace: 'a/b' }),
    status: 400,
    code: 'invalid-event',
    says: 'data.namespace',
  },
  {
    id: 'M16',
    name: 'very long name (300 characters)',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, name: 'a'.repeat(300) }),
    status: 400,
    code: 'invalid-event',
    says: 'at most 253',
  },
  {
    id: 'M17',
    name: 'unicode name',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, name: 'clüster-é' }),
    status: 400,
    code: 'invalid-event',
    says: 'DNS-1123',
  },
  {
    id: 'M18',
    name: 'reference data missing the namespace',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ apiVersion: GROUP_VERSION, kind: 'TerraformCluster', name: 'c1' }),
    status: 400,
    code: 'invalid-event',
    says: 'data.namespace',
  },
  {
    id: 'M19',
    name: 'resource data without metadata',
    headers: binaryHeaders('dev.knative.apiserver.resource.add'),
    payload: JSON.stringify({ apiVersion: GROUP_VERSION, kind: 'TerraformCluster' }),
    status: 400,
    code: 'invalid-event',
    says: 'data.metadata',
  },
  {
    id: 'M20',
    name: 'data is a JSON array',
    headers: binaryHeaders(REF_ADD),
    payload: '[1,2]',
    status: 400,
    code: 'invalid-event',
    says: 'parse CloudEvent',
  },
  {
    id: 'M21',
    name: 'oversize body (over the 64 KiB cap)',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, pad: 'x'.repeat(70_000) }),
    status: 413,
    code: 'body-too-large',
    says: 'read request',
  },
  {
    id: 'M22',
    name: 'null byte and newline in the name',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, name: 'a\u0000b\nc' }),
    status: 400,
    code: 'invalid-event',
    says: 'data.name',
  },
  {
    id: 'M23',
    name: 'prototype pollution attempt in data',
    headers: binaryHeaders(REF_ADD),
    payload: '{"__proto__":{"x":1},"apiVersion":"v1","kind":"Pod"}',
    status: 400,
    code: 'invalid-event',
    says: 'data.name',
  },
];

it.each(corpus)('$id $name: 4xx with a clear message, no step, and the server stays up', async (row) => {
  const t = testApp();
  const response = await t.app.inject({
    method: 'POST',
    url: '/events',
    headers: row.headers,
    payload: row.payload,
  });
  expect(response.statusCode).toBe(row.status);
  const body = response.json();
  expect(body.error.code).toBe(row.code);
  expect(body.error.message.toLowerCase()).toContain(row.says.toLowerCase());
  expect(body.requestId).toEqual(expect.any(String));
  expect(t.calls).toEqual([]);
  const health = await t.app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode).toBe(200);
});

it('M24: a hostile value is never echoed back in the error message', async () => {
  const t = testApp();
  const hostile = '<script>alert(1)</script>';
  const response = await t.app.inject({
    method: 'POST',
    url: '/events',
    headers: binaryHeaders(REF_ADD),
    payload: JSON.stringify({ ...goodRef, name: hostile }),
  });
  expect(response.statusCode).toBe(400);
  expect(response.body).not.toContain('<script>');
});
