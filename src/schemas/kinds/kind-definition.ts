import type { z } from 'zod';
import type { CelRule } from './rules.ts';

/** A `kubectl get` column (CRD `additionalPrinterColumns`). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'boolean' | 'integer' | 'number' | 'date';
  jsonPath: string;
  description?: string;
  /** 0: always shown; 1: only with `-o wide`. */
  priority?: 0 | 1;
}

/** Everything the CRD generator needs to know about one kind; each kind module exports one. */
export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  /** What `kubectl explain <kind>` prints first. */
  description: string;
  spec: z.ZodType;
  /**
   * Absent: the kind has no status and its CRD no status subresource (templates: Cluster API's v1beta2
   * contract gives them none the controller writes).
   */
  status?: z.ZodType;
  /** Rules over the whole object (they read spec and status together). */
  rootRules: readonly CelRule[];
  printerColumns: readonly PrinterColumn[];
}

/**
 * Ready, Op, Reason, Age (DESIGN.md section 2) plus Waiting; Provisioned and the Job with `-o wide`. Ready
 * is the Ready condition, whose Reason stands beside it: a provisioned machine whose last apply failed is
 * not Ready (the Failing Jobs runbook reads them together); Provisioned is the Cluster API contract field.
 */
export const TARGET_PRINTER_COLUMNS: readonly PrinterColumn[] = [
  {
    name: 'Ready',
    type: 'string',
    jsonPath: '.status.conditions[?(@.type=="Ready")].status',
    description: 'Status of the Ready condition.',
  },
  { name: 'Op', type: 'string', jsonPath: '.status.activeJob.op', description: 'The op of the running Job.' },
  {
    name: 'Reason',
    type: 'string',
    jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
    description: 'Reason of the Ready condition.',
  },
  // Shown by default: `kubectl get` is where a person first asks why nothing is happening (DESIGN.md section 6).
  {
    name: 'Waiting',
    type: 'string',
    jsonPath: '.status.waitReason',
    description: 'Why nothing happens.',
  },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  {
    name: 'Provisioned',
    type: 'boolean',
    jsonPath: '.status.ready',
    description: 'The infrastructure is provisioned (Cluster API contract).',
    priority: 1,
  },
  { name: 'Job', type: 'string', jsonPath: '.status.activeJob.name', priority: 1 },
];
