import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { onUnexpectedExit, startProcess, type UnexpectedExit } from '../../../src/local/process.ts';

// The children of the local run (src/local/process.ts), as real processes: each leads a process group of
// its own, so a terminal's Ctrl-C (which signals the whole foreground group) reaches only the local run,
// whose ordered stop then stops them one by one; and a local run killed outright still takes them with it.

const logDir = mkdtempSync(join(tmpdir(), 'captf-process-'));
afterAll(() => rmSync(logDir, { recursive: true, force: true }));

/** The process group of `pid` (field 5 of /proc/<pid>/stat, after the command in parentheses). */
function processGroup(pid: number | 'self'): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

it('starts each child in a process group of its own, so a Ctrl-C to the terminal reaches only the local run', async () => {
  const child = startProcess('sleeper', 'sleep', ['60'], logDir);
  try {
    expect(processGroup(child.pid)).toBe(child.pid);
    expect(processGroup(child.pid)).not.toBe(processGroup('self'));
  } finally {
    await child.stop(1000);
  }
  expect(alive(child.pid)).toBe(false);
});

it('stops a child whose parent is killed outright (SIGKILL: no shutdown of its own runs)', async () => {
  const script = [
    `import { startProcess } from ${JSON.stringify(join(import.meta.dirname, '../../../src/local/process.ts'))};`,
    `const child = startProcess('orphan', 'sleep', ['60'], ${JSON.stringify(logDir)});`,
    'console.log(child.pid);',
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const parent = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const childPid = await new Promise<number>((resolve, reject) => {
    parent.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    parent.once('exit', (code) => reject(new Error(`the parent exited (${code}) before starting its child`)));
  });
  expect(alive(childPid)).toBe(true);
  parent.kill('SIGKILL');
  const deadline = Date.now() + 10_000;
  while (alive(childPid) && Date.now() < deadline) await sleep(100);
  expect(alive(childPid)).toBe(false);
});

it('reports a child killed from outside, with its log, and not one the local run stopped or killed', async () => {
  const seen: UnexpectedExit[] = [];
  const unsubscribe = onUnexpectedExit((exit) => seen.push(exit));
  try {
    const stopped = startProcess('stopped', 'sleep', ['60'], logDir);
    const killed = startProcess('killed', 'sleep', ['60'], logDir);
    await stopped.stop(1000);
    await killed.kill();
    // Its last words just before it dies (the 'exit' event may come before they reach the log).
    const victim = startProcess(
      'victim',
      'sh',
      ['-c', 'echo serving; echo "fatal: last words"; kill -KILL $$'],
      logDir,
    );
    await victim.exited;
    const deadline = Date.now() + 5000;
    while (seen.length === 0 && Date.now() < deadline) await sleep(50);
    expect(seen).toEqual([
      {
        name: 'victim',
        pid: victim.pid,
        code: null,
        signal: 'SIGKILL',
        logPath: victim.logPath,
        tail: 'serving\nfatal: last words',
      },
    ]);
  } finally {
    unsubscribe();
  }
});
