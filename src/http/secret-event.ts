import { type WatchNamespaces, watchesNamespace } from '../core/watch-scope.ts';
import type { EventSubject } from '../schemas/cloudevents.ts';

/**
 * Secret events (DESIGN.md section 6): the event sources watch the Secrets a wait can depend on, those
 * labelled `captf.io/variables=true` and Cluster API's bootstrap data Secrets, in reference mode (the
 * event names the Secret and carries none of its data). Such an event runs no step of its own: the objects
 * registered as waiting for that Secret (src/core/wake.ts) get a requeue due now. Pure.
 */

/** A Secret named by an event. */
export interface NamedSecret {
  namespace: string;
  name: string;
}

/** The Secret an event is about, when it is one (core group) in a watched namespace; else undefined. */
export function secretOf(subject: EventSubject, watched: WatchNamespaces): NamedSecret | undefined {
  if (subject.kind !== 'Secret' || subject.apiVersion !== 'v1') return undefined;
  if (!watchesNamespace(watched, subject.namespace)) return undefined;
  return { namespace: subject.namespace, name: subject.name };
}
