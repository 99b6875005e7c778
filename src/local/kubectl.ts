import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * kubectl of the stack's own Kubernetes release (StackInfo.kubectlPath) against its kubeconfig: the local
 * run applies manifests the way a person would (`kubectl apply`), so what it applies is what they apply.
 */

const run = promisify(execFile);

/** Runs kubectl commands against one kubeconfig. */
export interface Kubectl {
  /** Runs `kubectl <args>` (stdin from `input`), returns stdout; throws with kubectl's stderr on failure. */
  run(args: readonly string[], input?: string): Promise<string>;
}

/** A kubectl bound to `kubeconfigPath`. */
export function kubectlFor(kubectlPath: string, kubeconfigPath: string): Kubectl {
  return {
    async run(args, input) {
      const child = run(kubectlPath, ['--kubeconfig', kubeconfigPath, ...args], {
        maxBuffer: 16 * 1024 * 1024,
      });
      if (input !== undefined) child.child.stdin?.end(input);
      try {
        return (await child).stdout;
      } catch (error) {
        const stderr = (error as { stderr?: string }).stderr ?? '';
        throw new Error(`kubectl ${args.join(' ')}: ${stderr.trim() || (error as Error).message}`, {
          cause: error,
        });
      }
    },
  };
}
