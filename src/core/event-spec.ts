/**
 * Events (events.k8s.io/v1) as the step decides them (DESIGN.md section 7): once per transition, under a
 * deterministic name, never carrying credentials, variables, outputs or raw output. The Kubernetes adapter
 * writes them; the core only describes them.
 */

/** An object an Event is about (`regarding`) or mentions (`related`). */
export interface EventObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
}

/** One Event. Never put credentials, variables, outputs or raw output in `note`. */
export interface EventSpec {
  regarding: EventObjectRef;
  related?: EventObjectRef;
  type: 'Normal' | 'Warning';
  /** CamelCase reason from DESIGN.md section 7, e.g. `JobSucceeded`. */
  reason: string;
  /** What the controller did, e.g. `Bookkeep`, `CreateJob`, `Prune`. */
  action: string;
  /** A human sentence, at most 1 KiB (the API server's limit); already redacted. */
  note: string;
  /** Names the transition; same object + reason + key = same Event name = emitted once. */
  transitionKey: string;
}

/** An Event about the step's own object, without the `regarding` reference (the shell adds it). */
export type RunEvent = Omit<EventSpec, 'regarding'>;

/** Longest Event note the API server accepts. */
export const NOTE_MAX = 1024;
