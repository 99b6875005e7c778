import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { testStack } from './index.ts';

/**
 * Runbooks as tests: their ```bash blocks are read from the markdown and run as written, with kubectl (on
 * PATH, bound to the test stack) and jq, so a doc change runs the new text and an answer the doc promises
 * but the product does not give fails a test.
 */

/** One ```bash block of a runbook and the `##` section it is in. */
export interface RunbookBlock {
  section: string;
  code: string;
}

/** The ```bash blocks of a markdown text, in order, each with the title of its `##` section. */
export function bashBlocks(markdown: string): RunbookBlock[] {
  const blocks: RunbookBlock[] = [];
  let section = '';
  let code: string[] | undefined;
  for (const line of markdown.split('\n')) {
    if (code !== undefined) {
      if (line.trim().startsWith('```')) {
        blocks.push({ section, code: code.join('\n') });
        code = undefined;
      } else code.push(line);
    } else if (line.startsWith('## ')) section = line.slice(3).trim();
    else if (line.trim() === '```bash') code = [];
  }
  return blocks;
}

/** The `index`-th bash block of the section whose title starts with `section`; throws when there is none. */
export function blockOf(blocks: readonly RunbookBlock[], section: string, index = 0): string {
  const found = blocks.filter((b) => b.section.startsWith(section))[index];
  if (!found) throw new Error(`the runbook has no bash block ${index} under a section "${section}…"`);
  return found.code;
}

/** A shell for runbook blocks: a PATH whose `kubectl` is the stack's; `close` removes it. */
export interface RunbookShell {
  /** Runs `code` in bash with `pipefail` (a failing kubectl fails the block) and `variables` set. */
  run(code: string, variables: Record<string, string>): Promise<{ stdout: string; stderr: string }>;
  close(): void;
}

/**
 * Makes a {@link RunbookShell}; each block may run for `timeoutMs`. `pathDirs` go on PATH after the stack's
 * kubectl (the kubectl plugin's directory, the node it runs on).
 */
export function runbookShell(timeoutMs = 60_000, pathDirs: readonly string[] = []): RunbookShell {
  const binDir = mkdtempSync(join(tmpdir(), 'captf-runbook-bin-'));
  symlinkSync(testStack().kubectlPath, join(binDir, 'kubectl'));
  const execFileAsync = promisify(execFile);
  return {
    async run(code, variables) {
      try {
        return await execFileAsync('bash', ['-o', 'pipefail', '-c', code], {
          env: {
            ...process.env,
            PATH: [binDir, ...pathDirs, process.env.PATH ?? ''].join(':'),
            KUBECONFIG: testStack().kubeconfigPath,
            ...variables,
          },
          timeout: timeoutMs,
          maxBuffer: 16 * 1024 * 1024,
        });
      } catch (error) {
        const { stdout, stderr } = error as { stdout?: string; stderr?: string };
        throw new Error(`runbook block failed:\n${code}\nstdout: ${stdout}\nstderr: ${stderr}`, {
          cause: error,
        });
      }
    },
    close() {
      rmSync(binDir, { recursive: true, force: true });
    },
  };
}
