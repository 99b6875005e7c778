import { describe, expect, it } from 'vitest';
import {
  apiServerOrigin,
  backendAccess,
  forwardedHeaders,
  matchesLabelSelector,
  observesState,
  proxiedBackend,
  proxyKubeconfig,
  routeOf,
  secretListAnswer,
  stateReportOf,
} from '../../../src/runner/backend-access.ts';
import type { BackendConfig } from '../../../src/schemas/run-config.ts';

// The in-cluster kubernetes backend goes through the runner's loopback proxy, which answers the backend's
// Secret list from a read of the run's own state Secret (issue 16 item 3).

function kubernetes(config: BackendConfig['config']): BackendConfig {
  return { type: 'kubernetes', config, secretKeys: [] };
}

/** The controller's default backend (src/core/run-secret-manifest.ts buildRunConfig). */
const DEFAULT = { secret_suffix: 'm-abc', namespace: 'team-a', in_cluster_config: true };
const SCOPE = { namespace: 'team-a', secretName: 'tfstate-default-m-abc' };

describe('backendAccess: which backends go through the proxy', () => {
  it("the controller's default backend is proxied, scoped to its state Secret", () => {
    expect(backendAccess(kubernetes(DEFAULT))).toEqual({ kind: 'proxied', scope: SCOPE });
  });

  it('in_cluster_config as the HCL string "true" counts; the namespace defaults as OpenTofu does', () => {
    expect(backendAccess(kubernetes({ secret_suffix: 's', in_cluster_config: 'true' }))).toEqual({
      kind: 'proxied',
      scope: { namespace: 'default', secretName: 'tfstate-default-s' },
    });
  });

  it.each([
    { id: 'no backend', backend: undefined },
    { id: 'another type', backend: { type: 's3', config: { ...DEFAULT }, secretKeys: [] } },
    { id: 'in_cluster_config absent (OpenTofu: false)', backend: kubernetes({ secret_suffix: 's' }) },
    { id: 'in_cluster_config false', backend: kubernetes({ ...DEFAULT, in_cluster_config: false }) },
    { id: 'in_cluster_config "false"', backend: kubernetes({ ...DEFAULT, in_cluster_config: 'false' }) },
    { id: 'config_path', backend: kubernetes({ ...DEFAULT, config_path: '/kube/config' }) },
    { id: 'host', backend: kubernetes({ ...DEFAULT, host: 'https://api:6443' }) },
    { id: 'token', backend: kubernetes({ ...DEFAULT, token: 't' }) },
    { id: 'config_context', backend: kubernetes({ ...DEFAULT, config_context: 'c' }) },
    { id: 'no secret_suffix', backend: kubernetes({ in_cluster_config: true }) },
  ])('$id: direct', ({ backend }) => {
    expect(backendAccess(backend)).toEqual({ kind: 'direct' });
  });

  it('the proxied backend loads the kubeconfig instead of the in-cluster config; the rest stays', () => {
    const backend: BackendConfig = {
      ...kubernetes(DEFAULT),
      labels: { 'clusterctl.cluster.x-k8s.io/move': '' },
    };
    expect(proxiedBackend(backend, '/captf/work/captf.kubeconfig')).toEqual({
      type: 'kubernetes',
      config: {
        secret_suffix: 'm-abc',
        namespace: 'team-a',
        in_cluster_config: false,
        config_path: '/captf/work/captf.kubeconfig',
      },
      secretKeys: [],
      labels: { 'clusterctl.cluster.x-k8s.io/move': '' },
    });
    expect(backend.config.in_cluster_config).toBe(true);
  });
});

describe("routeOf: the backend's Secret list is answered from a read of the state Secret", () => {
  const list = '/api/v1/namespaces/team-a/secrets';
  const fromGet = (labelSelector: string | undefined) => ({
    kind: 'list-from-get',
    getTarget: `${list}/tfstate-default-m-abc`,
    labelSelector,
  });

  it("the backend's list (labelSelector tfstate=true) becomes a GET of the state Secret", () => {
    expect(routeOf('GET', `${list}?labelSelector=tfstate%3Dtrue`, SCOPE)).toEqual(fromGet('tfstate=true'));
  });

  it('a list without a query, with a trailing slash, or with watch=false or watch=0', () => {
    for (const target of [list, `${list}/`, `${list}?watch=false`, `${list}?watch=0`]) {
      expect(routeOf('GET', target, SCOPE)).toEqual(fromGet(undefined));
    }
  });

  it('a name with URL-special characters is escaped in the path', () => {
    expect(routeOf('GET', list, { namespace: 'team-a', secretName: 'a/b?c' })).toMatchObject({
      getTarget: `${list}/a%2Fb%3Fc`,
    });
  });

  it.each([
    { id: 'a named get', method: 'GET', target: `${list}/tfstate-default-m-abc` },
    { id: 'a named get of another Secret', method: 'GET', target: `${list}/other` },
    { id: 'a watch', method: 'GET', target: `${list}?watch=true&labelSelector=tfstate%3Dtrue` },
    { id: 'a watch=1', method: 'GET', target: `${list}?watch=1` },
    { id: 'a watch with an empty value', method: 'GET', target: `${list}?watch=` },
    {
      id: 'a watch on the legacy watch path',
      method: 'GET',
      target: '/api/v1/watch/namespaces/team-a/secrets',
    },
    { id: 'an update', method: 'PUT', target: `${list}/tfstate-default-m-abc` },
    { id: 'a create', method: 'POST', target: list },
    { id: 'a HEAD', method: 'HEAD', target: list },
    { id: 'another namespace', method: 'GET', target: '/api/v1/namespaces/team-b/secrets' },
    { id: 'all namespaces', method: 'GET', target: '/api/v1/secrets' },
    {
      id: 'the lock Lease',
      method: 'GET',
      target: '/apis/coordination.k8s.io/v1/namespaces/team-a/leases/x',
    },
    { id: 'a lease list', method: 'GET', target: '/apis/coordination.k8s.io/v1/namespaces/team-a/leases' },
  ])('$id is forwarded as it is', ({ method, target }) => {
    expect(routeOf(method, target, SCOPE)).toEqual({ kind: 'forward' });
  });
});

describe('matchesLabelSelector', () => {
  const labels = { tfstate: 'true', tfstateWorkspace: 'default' };
  it.each([
    { selector: undefined, matches: true },
    { selector: '', matches: true },
    { selector: 'tfstate=true', matches: true },
    { selector: 'tfstate==true', matches: true },
    { selector: 'tfstate=false', matches: false },
    { selector: 'tfstate!=true', matches: false },
    { selector: 'tfstate=true,tfstateWorkspace=default', matches: true },
    { selector: 'tfstate=true, tfstateWorkspace=other', matches: false },
    { selector: 'tfstate', matches: true },
    { selector: '!tfstate', matches: false },
    { selector: 'constructor', matches: false },
    { selector: 'tfstate in (true)', matches: true },
  ])('$selector: $matches', ({ selector, matches }) => {
    expect(matchesLabelSelector(labels, selector)).toBe(matches);
  });
});

describe('secretListAnswer', () => {
  const secret = { kind: 'Secret', apiVersion: 'v1', metadata: { name: 's', labels: { tfstate: 'true' } } };
  const parsed = (answer: { body: string }) => JSON.parse(answer.body) as { kind: string; items: unknown[] };

  it('a state Secret that matches is the one item of a SecretList', () => {
    const answer = secretListAnswer({ status: 200, body: JSON.stringify(secret) }, 'tfstate=true');
    expect(answer.status).toBe(200);
    expect(parsed(answer)).toEqual({ kind: 'SecretList', apiVersion: 'v1', metadata: {}, items: [secret] });
  });

  it('one that does not match, or none yet (404), is an empty list', () => {
    expect(
      parsed(secretListAnswer({ status: 200, body: JSON.stringify(secret) }, 'tfstate=false')).items,
    ).toEqual([]);
    const missing = secretListAnswer({ status: 404, body: '{"kind":"Status"}' }, 'tfstate=true');
    expect(missing.status).toBe(200);
    expect(parsed(missing).items).toEqual([]);
  });

  it("a refusal or an outage is the API server's own answer; a body that is not JSON is a 502", () => {
    const forbidden = { status: 403, body: '{"kind":"Status","code":403}' };
    expect(secretListAnswer(forbidden, undefined)).toEqual(forbidden);
    expect(secretListAnswer({ status: 200, body: 'not json' }, undefined).status).toBe(502);
  });
});

describe("observesState and stateReportOf: the state as the backend's own requests show it", () => {
  const path = '/api/v1/namespaces/team-a/secrets';
  const secret = (over: Record<string, unknown> = {}) =>
    JSON.stringify({
      kind: 'Secret',
      apiVersion: 'v1',
      metadata: { name: 'tfstate-default-m-abc', namespace: 'team-a', labels: { tfstate: 'true' } },
      data: { tfstate: Buffer.from('x'.repeat(1000)).toString('base64') },
      ...over,
    });

  it('reads the answers to a GET or PUT of the state Secret and to a POST of its collection, nothing else', () => {
    expect(observesState('GET', `${path}/tfstate-default-m-abc`, SCOPE)).toBe(true);
    expect(observesState('PUT', `${path}/tfstate-default-m-abc?fieldManager=x`, SCOPE)).toBe(true);
    expect(observesState('POST', path, SCOPE)).toBe(true);
    expect(observesState('DELETE', `${path}/tfstate-default-m-abc`, SCOPE)).toBe(false);
    expect(observesState('GET', `${path}/tfstate-default-other`, SCOPE)).toBe(false);
    expect(
      observesState(
        'PUT',
        '/apis/coordination.k8s.io/v1/namespaces/team-a/leases/lock-tfstate-default-m-abc',
        SCOPE,
      ),
    ).toBe(false);
    expect(observesState('GET', '/api/v1/namespaces/team-b/secrets/tfstate-default-m-abc', SCOPE)).toBe(
      false,
    );
  });

  it('reports the decoded bytes of the data and whether the move label is there', () => {
    expect(stateReportOf(secret(), SCOPE)).toEqual({ bytes: 1000, moveLabel: false });
    const labelled = secret({
      metadata: {
        name: 'tfstate-default-m-abc',
        namespace: 'team-a',
        labels: { tfstate: 'true', 'clusterctl.cluster.x-k8s.io/move': '' },
      },
      data: { tfstate: Buffer.from('abc').toString('base64'), other: Buffer.from('de').toString('base64') },
    });
    expect(stateReportOf(labelled, SCOPE)).toEqual({ bytes: 5, moveLabel: true });
    // The empty Secret the controller creates: no data yet.
    expect(stateReportOf(secret({ data: undefined }), SCOPE)).toEqual({ bytes: 0, moveLabel: false });
  });

  it('another Secret, a Status, or a body that is not JSON says nothing', () => {
    expect(
      stateReportOf(secret({ metadata: { name: 'tfstate-default-other', namespace: 'team-a' } }), SCOPE),
    ).toBeUndefined();
    expect(stateReportOf('{"kind":"Status","code":409}', SCOPE)).toBeUndefined();
    expect(stateReportOf('not json', SCOPE)).toBeUndefined();
    expect(stateReportOf('null', SCOPE)).toBeUndefined();
  });
});

describe('apiServerOrigin: the in-cluster API server', () => {
  it('host and port from the kubelet variables; an IPv6 host in brackets', () => {
    expect(apiServerOrigin({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' })).toEqual(
      {
        ok: true,
        hostname: '10.96.0.1',
        port: 443,
        url: 'https://10.96.0.1:443',
      },
    );
    expect(
      apiServerOrigin({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }),
    ).toMatchObject({
      ok: true,
      hostname: 'fd00::1',
      url: 'https://[fd00::1]:6443',
    });
  });

  it.each([
    { id: 'no host', env: { KUBERNETES_SERVICE_PORT: '443' }, message: /KUBERNETES_SERVICE_HOST/ },
    { id: 'no port', env: { KUBERNETES_SERVICE_HOST: 'h' }, message: /KUBERNETES_SERVICE_PORT/ },
    {
      id: 'a bad port',
      env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: 'x' },
      message: /is no port/,
    },
    {
      id: 'port 0',
      env: { KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '0' },
      message: /is no port/,
    },
  ])('$id: an error naming the variable', ({ env, message }) => {
    const origin = apiServerOrigin(env);
    expect(origin.ok).toBe(false);
    if (!origin.ok) expect(origin.message).toMatch(message);
  });
});

describe('proxy headers and kubeconfig', () => {
  it('drops hop-by-hop headers, those the connection header names, host and authorization', () => {
    expect(
      forwardedHeaders({
        host: '127.0.0.1:1',
        authorization: 'Bearer stolen',
        connection: 'keep-alive, x-private',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'x-private': '1',
        accept: 'application/json',
        'content-type': 'application/json',
        'set-cookie': ['a', 'b'],
        'x-absent': undefined,
      }),
    ).toEqual({ accept: 'application/json', 'content-type': 'application/json', 'set-cookie': ['a', 'b'] });
  });

  it('the kubeconfig names the proxy and carries no credentials', () => {
    const config = JSON.parse(proxyKubeconfig('http://127.0.0.1:4321', 'team-a'));
    expect(config).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'captf-in-cluster', cluster: { server: 'http://127.0.0.1:4321' } }],
      users: [{ name: 'captf-service-account', user: {} }],
      contexts: [
        {
          name: 'captf-in-cluster',
          context: { cluster: 'captf-in-cluster', user: 'captf-service-account', namespace: 'team-a' },
        },
      ],
      'current-context': 'captf-in-cluster',
    });
  });
});
