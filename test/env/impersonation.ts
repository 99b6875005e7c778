import { KubeConfig } from '@kubernetes/client-node';
import { systemClock } from '../../src/adapters/clock.ts';
import { createKubeAdapter, type KubeAdapter } from '../../src/adapters/kube/adapter.ts';
import { testStack } from './index.ts';

/** The controller's ServiceAccount as the API server names it (bound by infra/rbac/controller.yaml). */
export const CONTROLLER_USER = 'system:serviceaccount:captf-system:captf-controller';

/**
 * The test stack's admin kubeconfig impersonating `user`, so what it may do is `user`'s RBAC and admission
 * alone; `server` aims it at another address (a proxy in front of the API server).
 */
export function impersonatedKubeConfig(user: string, server?: string): KubeConfig {
  const admin = new KubeConfig();
  admin.loadFromFile(testStack().kubeconfigPath);
  const cluster = admin.getCurrentCluster();
  const current = admin.getCurrentUser();
  if (cluster === null || current === null) throw new Error('kubeconfig: no current cluster or user');
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { ...cluster, ...(server ? { server } : {}) },
    { ...current, impersonateUser: user },
  );
  return kc;
}

/**
 * The controller's own Kubernetes adapter acting as its ServiceAccount: its requests meet the shipped RBAC
 * and admission policies. `instance` names it in the Events it writes.
 */
export function controllerAdapter(instance: string): KubeAdapter {
  return createKubeAdapter({
    source: { kind: 'loaded', config: impersonatedKubeConfig(CONTROLLER_USER) },
    clock: systemClock,
    reporter: { controller: 'captf.io/test', instance },
  });
}
