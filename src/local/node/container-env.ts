import type { V1Container, V1Pod } from '@kubernetes/client-node';

/**
 * A container's environment and its `$(VAR)` expansion, as the kubelet builds them
 * (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables; third_party/forked/golang/expansion). Pure: the
 * shell fetches the referenced Secrets and ConfigMaps first.
 */

/** Data of the Secrets and ConfigMaps a pod references, decoded to strings; absent = not found. */
export interface EnvSources {
  secrets: ReadonlyMap<string, Readonly<Record<string, string>>>;
  configMaps: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

/** Outcome: the ordered variables, or the reason the kubelet would report `CreateContainerConfigError`. */
export type EnvResolution =
  | { kind: 'resolved'; env: [name: string, value: string][] }
  | { kind: 'config-error'; message: string };

/** Names of the Secrets and ConfigMaps a container's `env` and `envFrom` reference. */
export function envReferences(container: V1Container): { secrets: Set<string>; configMaps: Set<string> } {
  const secrets = new Set<string>();
  const configMaps = new Set<string>();
  for (const from of container.envFrom ?? []) {
    if (from.secretRef?.name) secrets.add(from.secretRef.name);
    if (from.configMapRef?.name) configMaps.add(from.configMapRef.name);
  }
  for (const variable of container.env ?? []) {
    const secret = variable.valueFrom?.secretKeyRef?.name;
    const configMap = variable.valueFrom?.configMapKeyRef?.name;
    if (secret) secrets.add(secret);
    if (configMap) configMaps.add(configMap);
  }
  return { secrets, configMaps };
}

/**
 * Expands `$(NAME)` from `context`; `$$` is a literal `$`; an unknown or unclosed reference stays as
 * written (Kubernetes' forked `expansion.Expand`).
 */
export function expandReferences(input: string, context: ReadonlyMap<string, string>): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const next = input[cursor + 1];
    let advance = 1;
    if (next === '$') out += '$';
    else if (next === '(') {
      const close = input.indexOf(')', cursor + 2);
      if (close === -1) out += '$(';
      else {
        const name = input.slice(cursor + 2, close);
        out += context.get(name) ?? `$(${name})`;
        advance = close - cursor;
      }
    } else out += `$${next}`;
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** Values of the `fieldRef` paths the kubelet supports for env (downward API). */
export function fieldRefValue(pod: V1Pod, fieldPath: string): string | undefined {
  const meta = pod.metadata ?? {};
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (keyed?.[1] && keyed[2] !== undefined)
    return (keyed[1] === 'labels' ? meta.labels : meta.annotations)?.[keyed[2]] ?? '';
  const values: Record<string, string | undefined> = {
    'metadata.name': meta.name,
    'metadata.namespace': meta.namespace,
    'metadata.uid': meta.uid,
    'spec.nodeName': pod.spec?.nodeName,
    'spec.serviceAccountName': pod.spec?.serviceAccountName,
    'status.hostIP': pod.status?.hostIP,
    'status.hostIPs': pod.status?.hostIP,
    'status.podIP': pod.status?.podIP,
    'status.podIPs': pod.status?.podIP,
  };
  return values[fieldPath];
}

/**
 * Builds the environment: `base` first (the runtime's own variables and the `kubernetes` service's), then
 * `envFrom` in order, then `env` in order, each value expanded against the variables defined before it.
 * Later definitions of a name replace earlier ones, as in the kubelet.
 */
export function resolveEnv(
  pod: V1Pod,
  container: V1Container,
  sources: EnvSources,
  base: ReadonlyMap<string, string>,
): EnvResolution {
  const env = new Map(base);
  const namespace = pod.metadata?.namespace ?? '';
  for (const from of container.envFrom ?? []) {
    const ref = from.secretRef ?? from.configMapRef;
    if (!ref?.name) continue;
    const kind = from.secretRef ? 'secret' : 'configmap';
    const data = (from.secretRef ? sources.secrets : sources.configMaps).get(ref.name);
    if (data === undefined) {
      if (ref.optional) continue;
      return { kind: 'config-error', message: `${kind} "${ref.name}" not found` };
    }
    for (const [key, value] of Object.entries(data)) env.set(`${from.prefix ?? ''}${key}`, value);
  }
  for (const variable of container.env ?? []) {
    const valueFrom = variable.valueFrom;
    if (!valueFrom) {
      env.set(variable.name, expandReferences(variable.value ?? '', env));
      continue;
    }
    const keyRef = valueFrom.secretKeyRef ?? valueFrom.configMapKeyRef;
    if (keyRef) {
      const isSecret = valueFrom.secretKeyRef !== undefined;
      const data = (isSecret ? sources.secrets : sources.configMaps).get(keyRef.name ?? '');
      const value = data?.[keyRef.key];
      if (value !== undefined) env.set(variable.name, value);
      else if (!keyRef.optional)
        return {
          kind: 'config-error',
          message:
            data === undefined
              ? `${isSecret ? 'secret' : 'configmap'} "${keyRef.name}" not found`
              : `couldn't find key ${keyRef.key} in ${isSecret ? 'Secret' : 'ConfigMap'} ${namespace}/${keyRef.name}`,
        };
      continue;
    }
    if (valueFrom.fieldRef) {
      const value = fieldRefValue(pod, valueFrom.fieldRef.fieldPath);
      if (value === undefined)
        return {
          kind: 'config-error',
          message: `unsupported fieldRef ${valueFrom.fieldRef.fieldPath} for env ${variable.name}`,
        };
      env.set(variable.name, value);
      continue;
    }
    return {
      kind: 'config-error',
      message: `env ${variable.name}: this valueFrom source is not supported by the local node`,
    };
  }
  return { kind: 'resolved', env: [...env.entries()] };
}
