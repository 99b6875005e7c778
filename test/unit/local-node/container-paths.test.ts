import { describe, expect, it } from 'vitest';
import { launchPlan } from '../../../src/local/node/container-launch.ts';
import {
  type ContainerFilesystem,
  hostPathOf,
  rewriteArgument,
  rewriteEnvValue,
} from '../../../src/local/node/container-paths.ts';

// The `source` container of a Job (DESIGN.md section 9): the runner emptyDir at /captf/bin, the per-run
// Secret at /captf/config, a work emptyDir at /captf/work, the module image with captf/ at its root.
const fs: ContainerFilesystem = {
  mounts: [
    { mountPath: '/captf/bin', hostPath: '/pods/u1/volumes/bin' },
    { mountPath: '/captf/config', hostPath: '/pods/u1/volumes/config' },
    { mountPath: '/captf/work/', hostPath: '/pods/u1/volumes/work' },
  ],
  rootfsPath: '/pods/u1/containers/source/rootfs',
  imageTopLevel: new Set(['captf']),
  terminationMessage: {
    containerPath: '/dev/termination-log',
    hostPath: '/pods/u1/containers/source/termination-log',
  },
};

describe('hostPathOf', () => {
  const rows = [
    {
      id: 'R1',
      name: 'the termination message path',
      path: '/dev/termination-log',
      host: '/pods/u1/containers/source/termination-log',
    },
    { id: 'R2', name: 'a file in a volume', path: '/captf/bin/runner', host: '/pods/u1/volumes/bin/runner' },
    { id: 'R3', name: 'the mount point itself', path: '/captf/config', host: '/pods/u1/volumes/config' },
    {
      id: 'R4',
      name: 'a mount path written with a trailing slash',
      path: '/captf/work/x',
      host: '/pods/u1/volumes/work/x',
    },
    {
      id: 'R5',
      name: 'the module in the image',
      path: '/captf/module',
      host: '/pods/u1/containers/source/rootfs/captf/module',
    },
    {
      id: 'R6',
      name: 'the runtime in the image',
      path: '/captf/runtime',
      host: '/pods/u1/containers/source/rootfs/captf/runtime',
    },
    {
      id: 'R7',
      name: 'a sibling sharing a prefix with a mount is not in it',
      path: '/captf/binary',
      host: '/pods/u1/containers/source/rootfs/captf/binary',
    },
    { id: 'R8', name: 'a host path the image lacks stays as is', path: '/bin/sh', host: '/bin/sh' },
    { id: 'R9', name: '/dev/null stays', path: '/dev/null', host: '/dev/null' },
  ];
  it.each(rows)('$id $name', ({ path, host }) => {
    expect(hostPathOf(path, fs)).toBe(host);
  });

  it('the longest containing mount wins (stacked mounts)', () => {
    const stacked = { ...fs, mounts: [...fs.mounts, { mountPath: '/captf/bin/lib', hostPath: '/libs' }] };
    expect(hostPathOf('/captf/bin/lib/libc.so.6', stacked)).toBe('/libs/libc.so.6');
    expect(hostPathOf('/captf/bin/ld.so', stacked)).toBe('/pods/u1/volumes/bin/ld.so');
  });
});

describe('rewriteArgument and rewriteEnvValue', () => {
  const rows = [
    {
      id: 'A1',
      name: '--flag=/path',
      arg: '--module-dir=/captf/module',
      out: '--module-dir=/pods/u1/containers/source/rootfs/captf/module',
    },
    {
      id: 'A2',
      name: '-flag=/path (Go, Terraform)',
      arg: '-chdir=/captf/work',
      out: '-chdir=/pods/u1/volumes/work',
    },
    {
      id: 'A3',
      name: '--result-file=/dev/termination-log',
      arg: '--result-file=/dev/termination-log',
      out: '--result-file=/pods/u1/containers/source/termination-log',
    },
    { id: 'A4', name: 'a word is not a path', arg: 'run', out: 'run' },
    { id: 'A5', name: '--op=apply has no path', arg: '--op=apply', out: '--op=apply' },
    { id: 'A6', name: 'a relative path stays', arg: 'captf/module', out: 'captf/module' },
  ];
  it.each(rows)('$id $name', ({ arg, out }) => {
    expect(rewriteArgument(arg, fs)).toBe(out);
  });

  it('a PATH-like env value is rewritten element by element', () => {
    expect(rewriteEnvValue('/captf/bin:/usr/bin', fs)).toBe('/pods/u1/volumes/bin:/usr/bin');
  });
});

describe('launchPlan', () => {
  const env: [string, string][] = [
    ['PATH', '/usr/bin:/bin'],
    ['OP', 'apply'],
  ];
  it('runs the real Job command unchanged but for its paths, expanding $(VAR)', () => {
    const plan = launchPlan({
      container: {
        name: 'source',
        command: ['/captf/bin/ld.so', '--library-path', '/captf/bin/lib', '/captf/bin/runner'],
        args: ['run', '--op=$(OP)', '--module-dir=/captf/module', '--result-file=/dev/termination-log'],
      },
      image: { entrypoint: ['/ignored'], cmd: ['ignored'] },
      env,
      fs,
    });
    expect(plan.argv).toEqual([
      '/pods/u1/volumes/bin/ld.so',
      '--library-path',
      '/pods/u1/volumes/bin/lib',
      '/pods/u1/volumes/bin/runner',
      'run',
      '--op=apply',
      '--module-dir=/pods/u1/containers/source/rootfs/captf/module',
      '--result-file=/pods/u1/containers/source/termination-log',
    ]);
    expect(plan.cwd).toBe(fs.rootfsPath);
  });

  const entrypointRows = [
    {
      id: 'E1',
      name: 'no command, no args: entrypoint + cmd',
      command: undefined,
      args: undefined,
      argv: ['/runner', 'help'],
    },
    {
      id: 'E2',
      name: 'args only: entrypoint + args',
      command: undefined,
      args: ['copy', '/captf/bin'],
      argv: ['/runner', 'copy', '/pods/u1/volumes/bin'],
    },
    {
      id: 'E3',
      name: 'command only: the image cmd is dropped',
      command: ['/bin/true'],
      args: undefined,
      argv: ['/bin/true'],
    },
  ];
  it.each(entrypointRows)('$id $name', ({ command, args, argv }) => {
    const plan = launchPlan({
      container: { name: 'runner', ...(command ? { command } : {}), ...(args ? { args } : {}) },
      image: { entrypoint: ['/runner'], cmd: ['help'] },
      env,
      fs: { ...fs, imageTopLevel: new Set(['runner']) },
    });
    expect(plan.argv).toEqual(argv.map((arg) => (arg === '/runner' ? `${fs.rootfsPath}/runner` : arg)));
  });

  it('a workingDir in a volume becomes that volume directory', () => {
    const plan = launchPlan({
      container: { name: 's', command: ['x'], workingDir: '/captf/work' },
      image: {},
      env,
      fs,
    });
    expect(plan.cwd).toBe('/pods/u1/volumes/work');
  });
});
