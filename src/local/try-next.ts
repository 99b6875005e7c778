import { dirname } from 'node:path';

/**
 * The commands the main job prints after applying the sample: what a new user can try next on the local
 * run (change a variable, make a destructive change and approve its plan as the requesting user, read the
 * sample cluster's outputs Secret, check drift, see what the controller costs the API server, delete),
 * spelled with the stack's own kubectl and kubeconfig so they can be pasted as they are.
 */

/** Where the commands point. */
export interface TryNextTarget {
  kubectlPath: string;
  kubeconfigPath: string;
  namespace: string;
  /** The directory of the built `kubectl-captf` executable (dist/plugin). */
  pluginDir: string;
  /** The directory of the `node` the plugin's shebang needs (Node 24, as the local run's). */
  nodeDir: string;
  /** The handlers' base URL, whose `/metrics` the local run serves without auth (DESIGN.md section 14). */
  handlersUrl: string;
}

/** The lines to print (pure). */
export function nextCommands(target: TryNextTarget): string[] {
  const k = `${target.kubectlPath} --kubeconfig ${target.kubeconfigPath} -n ${target.namespace}`;
  // kubectl takes no flags before a plugin's name: the plugin reads the kubeconfig from KUBECONFIG.
  const c = `kubectl captf`;
  const n = `-n ${target.namespace}`;
  return [
    '',
    'Try next (in another terminal):',
    `  export K="${k}"`,
    '  # the kubectl captf plugin: kubectl finds it on PATH (`npm link` installs it for good)',
    `  export PATH="${target.pluginDir}:${dirname(target.kubectlPath)}:${target.nodeDir}:$PATH" KUBECONFIG="${target.kubeconfigPath}"`,
    `  ${c} status ${n}`,
    '  # change a variable: a new apply (size updates in place)',
    `  $K patch terraformmachine m-a --type=merge -p '{"spec":{"variables":{"size":"medium"}}}'`,
    '  # a destructive change (replaces the server): the apply stops with DestructivePlanBlocked and a TerraformPlan',
    `  $K patch terraformmachine m-b --type=merge -p '{"spec":{"variables":{"generation":2}}}'`,
    '  $K get terraformplans',
    `  ${c} plan terraformmachine/m-b ${n}`,
    '  # approve it as yourself (spec.approvedBy must be the requesting user; the admission policy checks it)',
    `  $K --as=alice patch terraformplan <plan> --type=merge -p '{"spec":{"approved":true,"approvedBy":"alice"}}'`,
    `  ${c} approve terraformmachine/m-b ${n} --as=alice`,
    "  # the cluster's module outputs (spec.outputs.secretName: demo-outputs), sensitive ones included",
    `  $K get terraformcluster demo -o jsonpath='{.status.outputs}{"\\n"}'`,
    `  $K get secret demo-outputs -o go-template='{{range $k, $v := .data}}{{$k}}: {{$v | base64decode}}{{"\\n"}}{{end}}'`,
    '  # what happened, and why nothing is happening',
    '  $K get terraformclusters,terraformmachines,jobs',
    '  $K get events --field-selector involvedObject.name=m-b',
    `  ${c} why terraformmachine/m-b ${n}`,
    "  # the runs with their results, and a run's log (kept after its pod is gone)",
    `  ${c} runs terraformmachine/m-b ${n}`,
    `  ${c} logs terraformmachine/m-b ${n} --op apply --attempt 1`,
    '  # what the controller costs: the API requests it made, by verb and resource (Prometheus text)',
    `  curl -s ${target.handlersUrl}/metrics | grep '^captf_kube_requests_total'`,
    '  # delete: a destroy Job runs, then the finalizer goes',
    '  $K delete terraformmachine m-a',
    '',
  ];
}
