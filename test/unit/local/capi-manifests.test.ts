import { describe, expect, it } from 'vitest';
import {
  type CapiCrd,
  type CapiWebhookConfiguration,
  crdWithConversionWebhook,
  webhookConfigurationOnLoopback,
} from '../../../src/local/capi-manifests.ts';

// Cluster API's manifests pointed at a manager on loopback (issue 11 item 6): what kustomize and
// cert-manager do for a release install, done without a Service or cert-manager.

const endpoint = { baseUrl: 'https://127.0.0.1:9443', caPem: '-----BEGIN CERTIFICATE-----\nCA\n' };
const caBundle = Buffer.from(endpoint.caPem).toString('base64');

const crd: CapiCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: 'clusters.cluster.x-k8s.io',
    annotations: { 'controller-gen.kubebuilder.io/version': 'v0' },
  },
  spec: { group: 'cluster.x-k8s.io', versions: [{ name: 'v1beta1' }, { name: 'v1beta2' }] },
};

const mutating: CapiWebhookConfiguration = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'MutatingWebhookConfiguration',
  metadata: { name: 'mutating-webhook-configuration' },
  webhooks: [
    {
      name: 'default.cluster.cluster.x-k8s.io',
      admissionReviewVersions: ['v1'],
      failurePolicy: 'Fail',
      clientConfig: {
        service: {
          name: 'webhook-service',
          namespace: 'system',
          path: '/mutate-cluster-x-k8s-io-v1beta2-cluster',
        },
      },
    },
  ],
};

describe('Cluster API manifests on loopback', () => {
  it('a CRD converts through the manager’s /convert, trusting the local CA, with the provider label', () => {
    const patched = crdWithConversionWebhook(crd, endpoint);
    expect(patched.spec.conversion).toEqual({
      strategy: 'Webhook',
      webhook: {
        conversionReviewVersions: ['v1'],
        clientConfig: { url: 'https://127.0.0.1:9443/convert', caBundle },
      },
    });
    expect(patched.metadata.labels).toEqual({
      'cluster.x-k8s.io/provider': 'cluster-api',
      // As `clusterctl init` labels them: `clusterctl move` finds the kinds it moves by it.
      'clusterctl.cluster.x-k8s.io': '',
    });
    expect(patched.metadata.annotations).toEqual(crd.metadata.annotations);
    expect(patched.spec.versions).toEqual(crd.spec.versions);
  });

  it('a webhook is called by URL at its own path instead of through the Service; the rest is kept', () => {
    const rewritten = webhookConfigurationOnLoopback(mutating, endpoint);
    expect(rewritten).toEqual({
      ...mutating,
      metadata: {
        name: 'capi-mutating-webhook-configuration',
        labels: { 'cluster.x-k8s.io/provider': 'cluster-api' },
      },
      webhooks: [
        {
          ...mutating.webhooks[0],
          clientConfig: { url: 'https://127.0.0.1:9443/mutate-cluster-x-k8s-io-v1beta2-cluster', caBundle },
        },
      ],
    });
  });
});
