import { z } from 'zod';
import type { WatchNamespaces } from '../core/watch-scope.ts';
import { commaList } from './comma-list.ts';

/** A namespace name: a DNS-1123 label (Kubernetes API conventions). */
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * `CAPTF_WATCH_NAMESPACES`, shared by the handlers' and the relay's configuration: comma-separated
 * namespace names (src/core/watch-scope.ts); absent or empty: every namespace. Sorted, duplicates dropped.
 */
export const WatchNamespacesEnv = commaList()
  .pipe(
    z.array(
      z
        .string()
        .regex(
          NAMESPACE_NAME,
          'CAPTF_WATCH_NAMESPACES: each entry must be a namespace name (DNS-1123 label)',
        ),
    ),
  )
  .transform((names): WatchNamespaces => [...new Set(names)].sort())
  .optional()
  .transform((names): WatchNamespaces => names ?? []);
