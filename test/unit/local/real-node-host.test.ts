import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registryHosts } from '../../../src/local/real-node/containerd.ts';
import {
  absentKubeletHostPaths,
  hostNames,
  removeKubeletHostPaths,
} from '../../../src/local/real-node/host.ts';
import { serviceRouteRules } from '../../../src/local/real-node/service-route.ts';

describe('the host names of a real node', () => {
  it('are a function of the stack directory, and two stacks get different ones', () => {
    const one = hostNames('/tmp/captf-stack-a/node');
    const two = hostNames('/tmp/captf-stack-b/node');
    expect(hostNames('/tmp/captf-stack-a/node')).toEqual(one);
    for (const key of ['bridge', 'subnet', 'nftTable', 'cgroup'] as const)
      expect(one[key]).not.toBe(two[key]);
  });

  it('fit the kernel: a bridge name of at most 15 characters, a /24 clear of the service range', () => {
    for (let index = 0; index < 200; index += 1) {
      const names = hostNames(`/tmp/stack-${index}`);
      expect(names.bridge.length).toBeLessThanOrEqual(15);
      const match = /^10\.(\d+)\.(\d+)\.0\/24$/.exec(names.subnet);
      expect(Number(match?.[1])).toBeGreaterThanOrEqual(64);
      expect(Number(match?.[1])).toBeLessThan(128);
      expect(Number(match?.[2])).toBeLessThan(256);
    }
  });
});

describe('the service route and the registry hosts', () => {
  it('sends only the node’s pods on its bridge to the API server on loopback', () => {
    const names = hostNames('/tmp/x');
    const rules = serviceRouteRules(names, '10.0.0.1', 6443);
    expect(rules).toContain(`table ip ${names.nftTable} {`);
    expect(rules).toContain(
      `iifname "${names.bridge}" ip saddr ${names.subnet} ip daddr 10.0.0.1 tcp dport 443 dnat to 127.0.0.1:6443`,
    );
  });

  it('serves captf.local from the local registry only (server and host both the registry)', () => {
    expect(registryHosts('127.0.0.1:5000')).toBe(
      'server = "http://127.0.0.1:5000"\n\n[host."http://127.0.0.1:5000"]\n  capabilities = ["pull", "resolve"]\n',
    );
  });
});

describe("the kubelet's paths outside its own directory (its device plugin socket)", () => {
  const withBase = (test: (base: string) => void) => () => {
    const dir = mkdtempSync(join(tmpdir(), 'captf-kubelet-host-'));
    try {
      test(join(dir, 'var-lib-kubelet'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  /** What the kubelet leaves on the host when it runs: its socket in the constant directory. */
  const kubeletRan = (base: string) => {
    mkdirSync(join(base, 'device-plugins'), { recursive: true });
    writeFileSync(join(base, 'device-plugins', 'kubelet.sock'), '');
  };

  it(
    'K1 a host without them has them all removed after the node stops',
    withBase((base) => {
      const absent = absentKubeletHostPaths(base);
      expect(absent).toHaveLength(3);
      kubeletRan(base);
      expect(removeKubeletHostPaths(absent)).toEqual([]);
      expect(absentKubeletHostPaths(base)).toHaveLength(3);
    }),
  );

  it(
    'K2 what was there before, or holds something else now, stays',
    withBase((base) => {
      mkdirSync(join(base, 'device-plugins'), { recursive: true });
      const absent = absentKubeletHostPaths(base);
      expect(absent).toEqual([join(base, 'device-plugins', 'kubelet.sock')]);
      kubeletRan(base);
      writeFileSync(join(base, 'device-plugins', 'other.sock'), '');
      expect(removeKubeletHostPaths(absent)).toEqual([]);
      expect(absentKubeletHostPaths(base)).toEqual([join(base, 'device-plugins', 'kubelet.sock')]);
      const fresh = join(base, 'fresh');
      mkdirSync(join(fresh, 'device-plugins'), { recursive: true });
      writeFileSync(join(fresh, 'device-plugins', 'vendor.sock'), '');
      expect(removeKubeletHostPaths([join(fresh, 'device-plugins'), fresh])).toEqual([]);
      expect(absentKubeletHostPaths(fresh)).toEqual([join(fresh, 'device-plugins', 'kubelet.sock')]);
    }),
  );
});
