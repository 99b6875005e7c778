import type { V1Lease, V1Role, V1RoleBinding, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import { isKubeError } from '../adapters/kube/errors.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { KubeWriter } from '../adapters/kube/writer.ts';
import type { IdentityChecks } from '../adapters/redis/identity-checks.ts';
import {
  IDENTITY_CHECK_TTL_SECONDS,
  identityVerified,
  isRunnerIdentityInPlace,
  type LockLease,
  leaseOwnedByState,
  type RunnerIdentity,
  runnerIdentityDigest,
} from '../core/runner-identity.ts';

/** What putting an identity in place did: nothing (the RoleBinding said it is complete), or its writes. */
export type IdentityEnsured = 'in-place' | 'written';

/** Creates; an object already there under the name is left as it is (a placeholder, or an earlier step's). */
async function createUnlessExists(create: () => Promise<unknown>): Promise<boolean> {
  try {
    await create();
    return true;
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    return false;
  }
}

/** Creates, or replaces what is there: a Role's rules and a RoleBinding's digest must be the manifest's. */
async function createOrReplace(
  create: () => Promise<unknown>,
  replace: () => Promise<unknown>,
): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    await replace();
  }
}

/** A state Secret as created or read: its name, whether this call created it, its uid (none: no Secret). */
interface StateSecretSeen {
  name: string;
  created: boolean;
  uid: string | undefined;
}

/** Creates the empty state Secret; one already there is kept (and read, for its uid). */
async function createStateSecret(
  kube: { reader: KubeReader; writer: KubeWriter },
  secret: V1Secret,
): Promise<StateSecretSeen> {
  const name = secret.metadata?.name ?? '';
  try {
    return { name, created: true, uid: (await kube.writer.createSecret(secret)).metadata?.uid };
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    const there = await kube.reader.getSecret(secret.metadata?.namespace ?? '', name);
    return { name, created: false, uid: there?.metadata?.uid };
  }
}

/** Creates the empty state Secret when it is missing; undefined when one is there (nothing read). */
async function restoreStateSecret(
  writer: KubeWriter,
  secret: V1Secret,
): Promise<StateSecretSeen | undefined> {
  try {
    const created = await writer.createSecret(secret);
    return { name: secret.metadata?.name ?? '', created: true, uid: created.metadata?.uid };
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    return undefined;
  }
}

/** Creates the free lock Lease owned by its state Secret (src/core/runner-identity.ts); one there is kept. */
function createLease(
  writer: KubeWriter,
  lease: LockLease,
  state: StateSecretSeen | undefined,
): Promise<boolean> {
  const owned = state ? leaseOwnedByState(lease, state) : lease;
  return createUnlessExists(() => writer.createLease(owned as V1Lease));
}

/** The empty state Secret and the free lock Lease, each kept when it exists. */
async function createStateObjects(
  kube: { reader: KubeReader; writer: KubeWriter },
  identity: RunnerIdentity,
): Promise<void> {
  const { stateSecret, lockLease } = identity;
  const state = stateSecret ? await createStateSecret(kube, stateSecret as V1Secret) : undefined;
  if (lockLease) await createLease(kube.writer, lockLease, state);
}

/** How an identity is put in place. */
export interface IdentityOptions {
  /** Put the state Secret back when missing: a lost state a person accepted, or an unprovisioned object. */
  restoreStateSecret?: 'accepted' | 'unprovisioned';
  /**
   * The object's first step sets the identity up (src/core/runner-setup.ts): nothing of it is expected
   * yet, so its RoleBinding is not read first and every part is created; one found there already (the
   * object re-created under its name, our finalizer put back) is kept or replaced as when the RoleBinding
   * says the identity is incomplete. A remembered check still stands for everything.
   */
  assumeAbsent?: boolean;
}

/**
 * Puts an object's runner identity (src/core/runner-identity.ts) in place before its Job is created, so the
 * Job's pod is admitted (its ServiceAccount exists) and its runner may reach its state. Two reads when it is
 * in place (none when `verified`: a remembered check of this identity, {@link ensureCheckedRunnerIdentity}):
 * the RoleBinding, written last with the digest of everything before it, and the lock Lease it
 * grants (issue 23 item 8): a Lease deleted by hand (a manual unlock) holds nothing and is always put back,
 * since the runner may only `get` and `update` it. The state Secret it grants comes back only with
 * `restoreStateSecret` (the planner's StateMissing rules: an object that shows no provisioning, or a lost
 * state a person accepted; src/core/state-evidence.ts), one create that keeps an existing Secret. Otherwise
 * the ServiceAccount, the empty state Secret, the free Lease and the Role are created (the state objects kept
 * when they exist; the account and the Role replaced, as their owner or the state's name may have changed).
 * A Lease it creates is owned by its state Secret, so it goes when the Secret goes (`clusterctl move` moves
 * the Secret, never the Lease; src/core/runner-identity.ts `leaseOwnedByState`): that costs a read of the
 * Secret when the Secret was there already (a re-created or moved object, a Lease put back by hand). The
 * RoleBinding comes last. Idempotent: a step that died half-way leaves no digest, and the next one finishes.
 * The first step's setup (`assumeAbsent`) goes straight to the creates: no read. Throws a KubeError on an
 * API failure.
 */
export async function ensureRunnerIdentity(
  kube: { reader: KubeReader; writer: KubeWriter },
  identity: RunnerIdentity,
  options: IdentityOptions & { verified?: boolean } = {},
): Promise<IdentityEnsured> {
  const { reader, writer } = kube;
  const { metadata } = identity.roleBinding;
  // A remembered check (`verified`, src/core/runner-identity.ts `identityVerified`) stands for both reads.
  const verified = options.verified === true;
  if (
    verified ||
    (options.assumeAbsent !== true &&
      isRunnerIdentityInPlace(identity, await reader.getRoleBinding(metadata.namespace, metadata.name)))
  ) {
    const { stateSecret, lockLease } = identity;
    // One create, kept when there (the usual case: no read of its uid unless a Lease must be put back). A
    // remembered check stands for the Secret of an unprovisioned object too, as for the Lease: the finalizer
    // step made both moments before the first Job, and a run that fails without them forgets the check.
    // A lost state a person accepted is always put back: the consent is spent by this very start.
    const restore =
      options.restoreStateSecret === 'accepted' ||
      (options.restoreStateSecret === 'unprovisioned' && !verified);
    const restored =
      stateSecret && restore ? await restoreStateSecret(writer, stateSecret as V1Secret) : undefined;
    let wrote = restored !== undefined;
    // A state Secret put back may have taken its Lease with it (the Lease is the Secret's, and goes with it).
    const leaseUnknown = !verified || restored !== undefined;
    if (
      lockLease &&
      leaseUnknown &&
      !(await reader.getLease(lockLease.metadata.namespace, lockLease.metadata.name))
    ) {
      // Its owner, read only now: a Lease is missing only after a person deleted it (or its Secret).
      const state =
        restored ??
        (stateSecret
          ? {
              name: stateSecret.metadata.name,
              created: false,
              uid: (await reader.getSecret(stateSecret.metadata.namespace, stateSecret.metadata.name))
                ?.metadata?.uid,
            }
          : undefined);
      wrote = (await createLease(writer, lockLease, state)) || wrote;
    }
    return wrote ? 'written' : 'in-place';
  }
  // Replaced when there: one left by an earlier object of the same name still names that object as owner,
  // and the garbage collector would take it from under this one's pods.
  const account = identity.serviceAccount as V1ServiceAccount;
  await createOrReplace(
    () => writer.createServiceAccount(account),
    () => writer.replaceServiceAccount(account),
  );
  await createStateObjects(kube, identity);
  const role = identity.role as V1Role;
  await createOrReplace(
    () => writer.createRole(role),
    () => writer.replaceRole(role),
  );
  const binding = identity.roleBinding as V1RoleBinding;
  await createOrReplace(
    () => writer.createRoleBinding(binding),
    () => writer.replaceRoleBinding(binding),
  );
  return 'written';
}

/**
 * {@link ensureRunnerIdentity}, skipping its reads when Redis remembers this identity found complete for
 * the object `uid` (src/core/runner-identity.ts `identityVerified`; DESIGN.md section 15), and remembering
 * it once it is in place. Redis not answering costs the reads, never the start: the check is made, and a
 * lost remember makes the next start check again. Throws a KubeError on an API failure, as it does.
 */
export async function ensureCheckedRunnerIdentity(
  deps: { kube: { reader: KubeReader; writer: KubeWriter }; checks: IdentityChecks },
  uid: string,
  identity: RunnerIdentity,
  options: IdentityOptions = {},
): Promise<IdentityEnsured> {
  const remembered = await deps.checks.get(uid);
  const verified = identityVerified(remembered.kind === 'found' ? remembered.digest : undefined, identity);
  const ensured = await ensureRunnerIdentity(deps.kube, identity, { ...options, verified });
  if (!verified) await deps.checks.remember(uid, runnerIdentityDigest(identity), IDENTITY_CHECK_TTL_SECONDS);
  return ensured;
}
