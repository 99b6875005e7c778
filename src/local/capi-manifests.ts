import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';

/**
 * Cluster API's own manifests (the CRDs and webhook configurations of its core module, cached by
 * scripts/build-binaries.sh capi) pointed at a manager on loopback. A release install gets the same from
 * kustomize (core/config/default: the `capi-` name prefix, the provider label, the conversion patches of
 * core/config/crd/patches) and cert-manager (the CA bundles); locally there is no Service and no
 * cert-manager, so each `service:` becomes a `url:` with the CA the launcher made.
 */

/** The label the release puts on everything it installs (core/config/default/kustomization.yaml). */
export const CAPI_PROVIDER_LABEL = { 'cluster.x-k8s.io/provider': 'cluster-api' } as const;

/**
 * The label `clusterctl init` adds to every component it installs; `clusterctl move` finds the kinds it
 * moves (Cluster, MachineDeployment, Machine, …) by it on their CRDs (issue 23 item 6).
 */
export const CLUSTERCTL_LABEL = { 'clusterctl.cluster.x-k8s.io': '' } as const;

/** The release's `namePrefix` (core/config/default/kustomization.yaml). */
const NAME_PREFIX = 'capi-';

const CrdSchema = z.looseObject({
  apiVersion: z.literal('apiextensions.k8s.io/v1'),
  kind: z.literal('CustomResourceDefinition'),
  metadata: z.looseObject({ name: z.string(), labels: z.record(z.string(), z.string()).optional() }),
  spec: z.looseObject({ group: z.string(), versions: z.array(z.looseObject({ name: z.string() })) }),
});
/** One of Cluster API's CRDs, as its module ships it. */
export type CapiCrd = z.infer<typeof CrdSchema>;

const WebhookSchema = z.looseObject({
  name: z.string(),
  // Strict: a webhook that already has a url, or none, is not the manifest this rewrite understands.
  clientConfig: z.strictObject({
    service: z.looseObject({ name: z.string(), namespace: z.string(), path: z.string().startsWith('/') }),
  }),
});
const WebhookConfigurationSchema = z.looseObject({
  apiVersion: z.literal('admissionregistration.k8s.io/v1'),
  kind: z.enum(['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']),
  metadata: z.looseObject({ name: z.string() }),
  webhooks: z.array(WebhookSchema).min(1),
});
/** The Mutating or ValidatingWebhookConfiguration of core/config/webhook/manifests.yaml. */
export type CapiWebhookConfiguration = z.infer<typeof WebhookConfigurationSchema>;

/** Where the API server reaches the manager's webhook server, and the CA it trusts for it. */
export interface WebhookEndpoint {
  /** `https://127.0.0.1:<port>`, no trailing slash. */
  baseUrl: string;
  /** PEM of the CA that signed the webhook server's certificate. */
  caPem: string;
}

function parseDocuments(path: string): unknown[] {
  return parseAllDocuments(readFileSync(path, 'utf8'))
    .map((doc) => doc.toJS() as unknown)
    .filter((doc) => doc !== null);
}

/** Reads every CRD of `dir` (one per `.yaml` file). Throws naming the file that is not a CRD. */
export function readCapiCrds(dir: string): CapiCrd[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .flatMap((file) =>
      parseDocuments(join(dir, file)).map((doc) => {
        const parsed = CrdSchema.safeParse(doc);
        if (!parsed.success) throw new Error(`read ${join(dir, file)}: ${z.prettifyError(parsed.error)}`);
        return parsed.data;
      }),
    );
}

/** Reads the two webhook configurations of manifests.yaml. Throws naming what does not match. */
export function readCapiWebhooks(path: string): CapiWebhookConfiguration[] {
  const configurations = parseDocuments(path).map((doc) => {
    const parsed = WebhookConfigurationSchema.safeParse(doc);
    if (!parsed.success) throw new Error(`read ${path}: ${z.prettifyError(parsed.error)}`);
    return parsed.data;
  });
  const kinds = configurations.map((configuration) => configuration.kind).sort();
  if (kinds.join() !== 'MutatingWebhookConfiguration,ValidatingWebhookConfiguration')
    throw new Error(
      `read ${path}: expected one Mutating and one ValidatingWebhookConfiguration, got ${kinds}`,
    );
  return configurations;
}

/**
 * The CRD with the conversion the release patches in (core/config/crd/patches/webhook_in_*.yaml): the API
 * server converts between v1beta1 and v1beta2 by calling the manager's `/convert`.
 */
export function crdWithConversionWebhook(crd: CapiCrd, endpoint: WebhookEndpoint): CapiCrd {
  return {
    ...crd,
    metadata: {
      ...crd.metadata,
      labels: { ...crd.metadata.labels, ...CAPI_PROVIDER_LABEL, ...CLUSTERCTL_LABEL },
    },
    spec: {
      ...crd.spec,
      conversion: {
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: ['v1'],
          clientConfig: { url: `${endpoint.baseUrl}/convert`, caBundle: caBundle(endpoint) },
        },
      },
    },
  };
}

/** A webhook configuration as applied locally: the release's name, each webhook called by URL. */
export interface LoopbackWebhookConfiguration {
  apiVersion: CapiWebhookConfiguration['apiVersion'];
  kind: CapiWebhookConfiguration['kind'];
  metadata: { name: string; labels: Record<string, string>; [key: string]: unknown };
  webhooks: { name: string; clientConfig: { url: string; caBundle: string }; [key: string]: unknown }[];
  [key: string]: unknown;
}

/** The webhook configuration as the release names it, each webhook called by URL instead of Service. */
export function webhookConfigurationOnLoopback(
  configuration: CapiWebhookConfiguration,
  endpoint: WebhookEndpoint,
): LoopbackWebhookConfiguration {
  return {
    ...configuration,
    metadata: {
      ...configuration.metadata,
      name: `${NAME_PREFIX}${configuration.metadata.name}`,
      labels: { ...CAPI_PROVIDER_LABEL },
    },
    webhooks: configuration.webhooks.map((webhook) => ({
      ...webhook,
      clientConfig: {
        url: `${endpoint.baseUrl}${webhook.clientConfig.service.path}`,
        caBundle: caBundle(endpoint),
      },
    })),
  };
}

function caBundle(endpoint: WebhookEndpoint): string {
  return Buffer.from(endpoint.caPem).toString('base64');
}
