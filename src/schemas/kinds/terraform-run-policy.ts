import { z } from 'zod';
import { API_VERSION } from './api-group.ts';
import type { KindDefinition } from './kind-definition.ts';
import { ObjectMetaSchema } from './object-meta.ts';

/**
 * Who may run what in a namespace (issue 16 item 2): the module images and the service accounts the Jobs of
 * its objects may use. The controller never reads it: it is the parameter of the ValidatingAdmissionPolicy
 * infra/admission/run-policy.yaml, which refuses a create or update of our kinds and their templates outside
 * every TerraformRunPolicy of the object's namespace. A kind of its own, not a ConfigMap: the usual `edit`
 * and `admin` roles write every ConfigMap of a namespace, but no role holds this kind unless granted, so a
 * tenant cannot lift its own bound (as CAPTF's cluster-scoped TerraformClusterIdentity is out of its reach).
 */

/** A host, a `/`, then anything but whitespace: `registry.example.com/`, `ghcr.io/acme/network`. */
const IMAGE_ENTRY = /^[^\s/]+\/\S*$/;

/** A ServiceAccount name (an RFC 1123 subdomain). */
const SERVICE_ACCOUNT_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Entries per list, and the longest image entry: a refusal lists them beside an image of up to 1024
 * characters, and the API server replaces an admission message over 5 KiB with the policy's fixed one.
 */
export const RUN_POLICY_LIMITS = { entries: 16, imageEntryLength: 128 } as const;

export const TerraformRunPolicySpecSchema = z
  .object({
    allowedImages: z
      .array(
        z
          .string()
          .max(RUN_POLICY_LIMITS.imageEntryLength)
          .regex(IMAGE_ENTRY, { message: 'a registry host, a `/`, and no whitespace' }),
      )
      .min(1)
      .max(RUN_POLICY_LIMITS.entries)
      .optional()
      .describe(
        'Module images the objects of this namespace may run (spec.source.image): an entry ending in `/` allows every image under it (registry.example.com/ or registry.example.com/modules/), any other one repository at any tag or digest (ghcr.io/acme/network). Absent: not bounded.',
      ),
    allowedServiceAccounts: z
      .array(z.string().max(253).regex(SERVICE_ACCOUNT_NAME, { message: 'a ServiceAccount name' }))
      .min(1)
      .max(RUN_POLICY_LIMITS.entries)
      .optional()
      .describe(
        'Service accounts their Jobs may run as (spec.jobs.serviceAccountName, spec.defaults.jobs.serviceAccountName). Absent: not bounded.',
      ),
  })
  .describe('What the objects of this namespace may run; every TerraformRunPolicy here must allow it.');
export type TerraformRunPolicySpec = z.infer<typeof TerraformRunPolicySpecSchema>;

export const TerraformRunPolicySchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('TerraformRunPolicy'),
  metadata: ObjectMetaSchema,
  spec: TerraformRunPolicySpecSchema,
});
export type TerraformRunPolicy = z.infer<typeof TerraformRunPolicySchema>;

export const terraformRunPolicyKind: KindDefinition = {
  kind: 'TerraformRunPolicy',
  plural: 'terraformrunpolicies',
  singular: 'terraformrunpolicy',
  shortNames: ['tfrp'],
  description:
    'The module images and service accounts the Jobs of a namespace may use (admission policy captf-run-policy).',
  spec: TerraformRunPolicySpecSchema,
  rootRules: [],
  printerColumns: [
    {
      name: 'Images',
      type: 'string',
      jsonPath: '.spec.allowedImages',
      description: 'Allowed module images.',
    },
    {
      name: 'Service Accounts',
      type: 'string',
      jsonPath: '.spec.allowedServiceAccounts',
      description: 'Allowed service accounts.',
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};
