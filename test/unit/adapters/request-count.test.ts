import { describe, expect, it } from 'vitest';
import { RequestCounter, requestKeyOf } from '../../../src/adapters/kube/request-count.ts';

const base = 'https://127.0.0.1:6443';
const rows = [
  {
    id: 'R01',
    name: 'get a Job',
    method: 'GET',
    path: '/apis/batch/v1/namespaces/team-a/jobs/j1',
    key: 'get jobs',
  },
  {
    id: 'R02',
    name: 'list Jobs in a namespace',
    method: 'GET',
    path: '/apis/batch/v1/namespaces/team-a/jobs?labelSelector=a%3Db&limit=500',
    key: 'list jobs',
  },
  {
    id: 'R03',
    name: 'list Jobs everywhere',
    method: 'GET',
    path: '/apis/batch/v1/jobs?limit=500',
    key: 'list jobs',
  },
  {
    id: 'R04',
    name: 'create a Secret',
    method: 'POST',
    path: '/api/v1/namespaces/team-a/secrets',
    key: 'create secrets',
  },
  {
    id: 'R05',
    name: 'patch a status subresource',
    method: 'PATCH',
    path: '/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/team-a/terraformmachines/m-a/status',
    key: 'patch terraformmachines/status',
  },
  {
    id: 'R06',
    name: 'replace a status subresource',
    method: 'PUT',
    path: '/apis/infrastructure.cluster.x-k8s.io/v1alpha1/namespaces/team-a/terraformmachines/m-a/status',
    key: 'update terraformmachines/status',
  },
  {
    id: 'R07',
    name: 'delete a pod',
    method: 'DELETE',
    path: '/api/v1/namespaces/team-a/pods/p1',
    key: 'delete pods',
  },
  {
    id: 'R08',
    name: 'delete a collection',
    method: 'DELETE',
    path: '/api/v1/namespaces/team-a/pods',
    key: 'deletecollection pods',
  },
  {
    id: 'R09',
    name: 'get a Namespace',
    method: 'GET',
    path: '/api/v1/namespaces/team-a',
    key: 'get namespaces',
  },
  { id: 'R10', name: 'list Namespaces', method: 'GET', path: '/api/v1/namespaces', key: 'list namespaces' },
  {
    id: 'R11',
    name: 'watch Pods',
    method: 'GET',
    path: '/api/v1/namespaces/team-a/pods?watch=true',
    key: 'watch pods',
  },
  {
    id: 'R12',
    name: 'create an Event',
    method: 'POST',
    path: '/apis/events.k8s.io/v1/namespaces/team-a/events',
    key: 'create events',
  },
];

describe('requestKeyOf', () => {
  it.each(rows)('$id $name', ({ method, path, key }) => {
    const { verb, resource } = requestKeyOf(method, `${base}${path}`);
    expect(`${verb} ${resource}`).toBe(key);
  });
});

describe('RequestCounter', () => {
  it('counts by verb and resource; take() returns the counts and starts again from zero', () => {
    const counter = new RequestCounter();
    counter.record({ verb: 'list', resource: 'pods' });
    counter.record({ verb: 'get', resource: 'jobs' });
    counter.record({ verb: 'list', resource: 'pods' });
    expect(counter.snapshot()).toEqual({ total: 3, byRequest: { 'get jobs': 1, 'list pods': 2 } });
    expect(counter.take()).toEqual({ total: 3, byRequest: { 'get jobs': 1, 'list pods': 2 } });
    expect(counter.snapshot()).toEqual({ total: 0, byRequest: {} });
  });

  it('measure counts the requests of one run, apart from runs at the same time and from the totals', async () => {
    const counter = new RequestCounter();
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    // Every other request a write: the reads are counted apart (they price a wait's safety requeue).
    const run = async (requests: number) => {
      for (let i = 0; i < requests; i += 1) {
        await tick();
        counter.record({ verb: i % 2 === 0 ? 'get' : 'patch', resource: 'jobs' });
      }
      return requests;
    };
    counter.record({ verb: 'list', resource: 'pods' }); // outside any run: the totals only
    const [two, five] = await Promise.all([counter.measure(() => run(2)), counter.measure(() => run(5))]);
    expect(two).toEqual({ value: 2, requests: 2, reads: 1 });
    expect(five).toEqual({ value: 5, requests: 5, reads: 3 });
    expect(counter.snapshot().total).toBe(8);
  });

  it('measure: a nested run counts in its own tally only; a throwing run rethrows', async () => {
    const counter = new RequestCounter();
    const outer = await counter.measure(async () => {
      counter.record({ verb: 'list', resource: 'jobs' });
      const inner = await counter.measure(async () => {
        counter.record({ verb: 'get', resource: 'pods' });
        counter.record({ verb: 'get', resource: 'pods' });
      });
      return inner.requests;
    });
    expect(outer).toEqual({ value: 2, requests: 1, reads: 1 });
    await expect(
      counter.measure(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
  });
});
