import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import type { V1KeyToPath, V1Pod, V1Volume, V1VolumeProjection } from '@kubernetes/client-node';
import { fieldRefValue } from './container-env.ts';

/**
 * Pod volumes materialised as host directories under `<podDir>/volumes/<name>` (the kubelet's
 * `pods/<uid>/volumes/...`). Secret, ConfigMap, projected and downward-API volumes are written once at
 * pod start and made read-only, like the kubelet's read-only tmpfs mounts; emptyDir is an empty
 * directory shared by every container that mounts it; hostPath is the host path itself.
 */

/** The API reads volumes need; undefined means not found. Values are raw bytes. */
export interface VolumeSourceReader {
  readSecret(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
  readConfigMap(namespace: string, name: string): Promise<Record<string, Buffer> | undefined>;
  /** A bound service-account token (TokenRequest API) for the pod. */
  requestToken(
    pod: V1Pod,
    audience: string | undefined,
    expirationSeconds: number,
  ): Promise<string | undefined>;
}

/** Outcome: host paths by volume name, or why the pod waits in `ContainerCreating` (kubelet: FailedMount). */
export type VolumeSetup =
  | { kind: 'ready'; hostPaths: Map<string, string> }
  | { kind: 'waiting'; message: string };

type FileSet = { path: string; content: Buffer; mode: number }[];
type Gathered = { kind: 'files'; files: FileSet } | { kind: 'missing'; message: string };

// Secret and ConfigMap volumes default to 0644 (API defaulting of defaultMode).
const defaultFileMode = 0o644;

function keyed(
  data: Record<string, Buffer>,
  items: V1KeyToPath[] | undefined,
  mode: number,
  what: string,
): Gathered {
  if (!items || items.length === 0)
    return {
      kind: 'files',
      files: Object.entries(data).map(([key, content]) => ({ path: key, content, mode })),
    };
  const files: FileSet = [];
  for (const item of items) {
    const content = data[item.key];
    if (content === undefined)
      return { kind: 'missing', message: `couldn't find key ${item.key} in ${what}` };
    files.push({ path: item.path, content, mode: item.mode ?? mode });
  }
  return { kind: 'files', files };
}

function downwardValue(pod: V1Pod, fieldPath: string): string | undefined {
  if (fieldPath === 'metadata.labels' || fieldPath === 'metadata.annotations') {
    const map = (fieldPath === 'metadata.labels' ? pod.metadata?.labels : pod.metadata?.annotations) ?? {};
    return Object.keys(map)
      .sort()
      .map((key) => `${key}=${JSON.stringify(map[key])}`)
      .join('\n');
  }
  return fieldRefValue(pod, fieldPath);
}

async function projection(
  pod: V1Pod,
  source: V1VolumeProjection,
  reader: VolumeSourceReader,
  mode: number,
): Promise<Gathered> {
  const namespace = pod.metadata?.namespace ?? '';
  if (source.secret) {
    const name = source.secret.name ?? '';
    const data = await reader.readSecret(namespace, name);
    if (!data)
      return source.secret.optional
        ? { kind: 'files', files: [] }
        : { kind: 'missing', message: `secret "${name}" not found` };
    return keyed(data, source.secret.items, mode, `Secret ${namespace}/${name}`);
  }
  if (source.configMap) {
    const name = source.configMap.name ?? '';
    const data = await reader.readConfigMap(namespace, name);
    if (!data)
      return source.configMap.optional
        ? { kind: 'files', files: [] }
        : { kind: 'missing', message: `configmap "${name}" not found` };
    return keyed(data, source.configMap.items, mode, `ConfigMap ${namespace}/${name}`);
  }
  if (source.serviceAccountToken) {
    const token = await reader.requestToken(
      pod,
      source.serviceAccountToken.audience,
      source.serviceAccountToken.expirationSeconds ?? 3607,
    );
    if (token === undefined)
      return {
        kind: 'missing',
        message: `service account token for ${pod.spec?.serviceAccountName} not issued`,
      };
    return {
      kind: 'files',
      files: [{ path: source.serviceAccountToken.path, content: Buffer.from(token), mode }],
    };
  }
  if (source.downwardAPI) {
    const files: FileSet = [];
    for (const item of source.downwardAPI.items ?? []) {
      const value = item.fieldRef ? downwardValue(pod, item.fieldRef.fieldPath) : undefined;
      if (value === undefined)
        return { kind: 'missing', message: `unsupported downward API item ${item.path}` };
      files.push({ path: item.path, content: Buffer.from(value), mode: item.mode ?? mode });
    }
    return { kind: 'files', files };
  }
  return { kind: 'missing', message: 'unsupported projected volume source' };
}

async function gather(pod: V1Pod, volume: V1Volume, reader: VolumeSourceReader): Promise<Gathered> {
  if (volume.secret) {
    const mode = volume.secret.defaultMode ?? defaultFileMode;
    return projection(
      pod,
      {
        secret: {
          name: volume.secret.secretName ?? '',
          items: volume.secret.items,
          optional: volume.secret.optional,
        },
      },
      reader,
      mode,
    );
  }
  if (volume.configMap)
    return projection(
      pod,
      { configMap: volume.configMap },
      reader,
      volume.configMap.defaultMode ?? defaultFileMode,
    );
  if (volume.downwardAPI)
    return projection(
      pod,
      { downwardAPI: volume.downwardAPI },
      reader,
      volume.downwardAPI.defaultMode ?? defaultFileMode,
    );
  if (volume.projected) {
    const files: FileSet = [];
    for (const source of volume.projected.sources ?? []) {
      const part = await projection(pod, source, reader, volume.projected.defaultMode ?? defaultFileMode);
      if (part.kind === 'missing') return part;
      files.push(...part.files);
    }
    return { kind: 'files', files };
  }
  return {
    kind: 'missing',
    message: `volume ${volume.name}: this volume type is not supported by the local node`,
  };
}

/** Writes `files` under `dir`, refusing paths that escape it, then makes the tree read-only. */
function writeReadOnly(dir: string, files: FileSet): void {
  mkdirSync(dir, { recursive: true });
  for (const file of files) {
    const path = normalize(join(dir, file.path));
    if (!path.startsWith(`${dir}/`)) throw new Error(`write volume file ${file.path}: escapes the volume`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.content);
    chmodSync(path, file.mode & ~0o222);
  }
  chmodSync(dir, 0o555);
}

/**
 * Materialises every volume of `pod` under `<podDir>/volumes`. A missing Secret, ConfigMap or key (the
 * per-run Secret is created right after its Job, so a pod may start first) leaves nothing half-written
 * and answers `waiting`: the caller retries, as the kubelet retries a failed mount. Throws only on
 * filesystem errors and API outages.
 */
export async function setUpVolumes(
  pod: V1Pod,
  podDir: string,
  reader: VolumeSourceReader,
): Promise<VolumeSetup> {
  const gathered: { volume: V1Volume; result: Gathered }[] = [];
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.emptyDir || volume.hostPath) continue;
    const result = await gather(pod, volume, reader);
    if (result.kind === 'missing')
      return {
        kind: 'waiting',
        message: `MountVolume.SetUp failed for volume "${volume.name}" : ${result.message}`,
      };
    gathered.push({ volume, result });
  }
  const hostPaths = new Map<string, string>();
  for (const volume of pod.spec?.volumes ?? []) {
    const dir = join(podDir, 'volumes', volume.name);
    if (volume.hostPath) hostPaths.set(volume.name, volume.hostPath.path);
    else if (volume.emptyDir) {
      mkdirSync(dir, { recursive: true });
      hostPaths.set(volume.name, dir);
    }
  }
  for (const { volume, result } of gathered) {
    const dir = join(podDir, 'volumes', volume.name);
    if (result.kind === 'files') writeReadOnly(dir, result.files);
    hostPaths.set(volume.name, dir);
  }
  return { kind: 'ready', hostPaths };
}
