import type { V1ContainerStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { logTarget, parseLogQuery, tailOffset } from '../../../src/local/node/container-logs.ts';
import { goDuration } from '../../../src/local/node/pod-worker.ts';

const query = (text: string) => parseLogQuery(new URLSearchParams(text));

describe('containerLogs query (kubelet PodLogOptions)', () => {
  it('reads what the API server sends for kubectl logs -f --tail=5 --limit-bytes=100', () => {
    expect(query('follow=true&tailLines=5&limitBytes=100&timestamps=false')).toEqual({
      kind: 'options',
      options: { follow: true, previous: false, tailLines: 5, limitBytes: 100 },
    });
  });

  it('defaults: no follow, no previous, everything', () => {
    expect(query('')).toEqual({ kind: 'options', options: { follow: false, previous: false } });
  });

  it('booleans decode like strconv.ParseBool', () => {
    expect(query('previous=1')).toMatchObject({ options: { previous: true } });
    expect(query('follow=T')).toMatchObject({ options: { follow: true } });
    expect(query('follow=False')).toMatchObject({ options: { follow: false } });
    expect(query('follow=yes')).toEqual({
      kind: 'refused',
      status: 400,
      message: '{"message": "Unable to decode query."}',
    });
  });

  it('legacy tail: a number stands for tailLines, "all" for everything', () => {
    expect(query('tail=3')).toMatchObject({ options: { tailLines: 3 } });
    expect(query('tail=all&tailLines=3')).toEqual({
      kind: 'options',
      options: { follow: false, previous: false },
    });
  });

  it('undecodable numbers and times are 400s', () => {
    for (const text of ['tailLines=x', 'limitBytes=1.5', 'sinceSeconds=ten', 'sinceTime=yesterday'])
      expect(query(text)).toMatchObject({ kind: 'refused', status: 400 });
  });

  it('values the validation refuses are 422s', () => {
    for (const text of [
      'tailLines=-1',
      'limitBytes=0',
      'sinceSeconds=0',
      'sinceSeconds=10&sinceTime=2026-01-01T00:00:00Z',
    ])
      expect(query(text)).toEqual({
        kind: 'refused',
        status: 422,
        message: '{"message": "Invalid request."}',
      });
  });
});

describe('which container log a request reads (validateContainerLogStatus)', () => {
  const status = (entry: Partial<V1ContainerStatus> & { state: V1ContainerStatus['state'] }) => ({
    containerStatuses: [{ name: 'source', image: 'i', imageID: '', ready: false, restartCount: 0, ...entry }],
  });
  const running = status({ state: { running: { startedAt: new Date() } }, containerID: 'captf-local://a' });
  const done = status({ state: { terminated: { exitCode: 0, containerID: 'captf-local://a' } } });

  it('a running container: its log, followed while it runs', () => {
    expect(logTarget('p', running, 'source', false)).toEqual({ kind: 'current', running: true });
  });

  it('a terminated container: its log, nothing more to follow', () => {
    expect(logTarget('p', done, 'source', false)).toEqual({ kind: 'current', running: false });
  });

  it('init containers are found too', () => {
    const init = { initContainerStatuses: done.containerStatuses.map((c) => ({ ...c, name: 'prepare' })) };
    expect(logTarget('p', init, 'prepare', false)).toEqual({ kind: 'current', running: false });
  });

  it('previous: never a last terminated instance on this node', () => {
    expect(logTarget('p', done, 'source', true)).toEqual({
      kind: 'unavailable',
      message: 'previous terminated container "source" in pod "p" not found',
    });
  });

  it('waiting containers say why there is no log', () => {
    const waiting = (reason: string) => status({ state: { waiting: { reason } } });
    expect(logTarget('p', waiting('ErrImagePull'), 'source', false)).toEqual({
      kind: 'unavailable',
      message: `container "source" in pod "p" is waiting to start: image can't be pulled`,
    });
    expect(logTarget('p', waiting('ImagePullBackOff'), 'source', false)).toMatchObject({
      message: 'container "source" in pod "p" is waiting to start: trying and failing to pull image',
    });
    expect(logTarget('p', waiting('ContainerCreating'), 'source', false)).toMatchObject({
      message: 'container "source" in pod "p" is waiting to start: ContainerCreating',
    });
  });

  it('no status for the container, or one terminated before it started', () => {
    expect(logTarget('p', {}, 'source', false)).toMatchObject({
      message: 'container "source" in pod "p" is not available',
    });
    const lost = status({ state: { terminated: { exitCode: 137 } } });
    expect(logTarget('p', lost, 'source', false)).toMatchObject({
      message: 'container "source" in pod "p" is terminated',
    });
  });
});

describe('tailLines', () => {
  const log = Buffer.from('one\ntwo\nthree\n');
  const tail = (buffer: Buffer, lines: number) => buffer.subarray(tailOffset(buffer, lines)).toString();

  it('keeps the last N lines', () => {
    expect(tail(log, 1)).toBe('three\n');
    expect(tail(log, 2)).toBe('two\nthree\n');
  });

  it('more lines than the log has: all of it; 0: nothing', () => {
    expect(tail(log, 10)).toBe('one\ntwo\nthree\n');
    expect(tail(log, 0)).toBe('');
  });

  it('a last line without a newline counts as a line', () => {
    expect(tail(Buffer.from('one\ntwo'), 1)).toBe('two');
    expect(tail(Buffer.from('one\ntwo'), 2)).toBe('one\ntwo');
  });

  it('empty lines count', () => {
    expect(tail(Buffer.from('a\n\n\nb\n'), 3)).toBe('\n\nb\n');
  });

  it('an empty log', () => {
    expect(tail(Buffer.alloc(0), 3)).toBe('');
  });
});

describe('durations in kubelet messages', () => {
  it('prints like Go time.Duration at millisecond precision', () => {
    expect(goDuration(0)).toBe('0s');
    expect(goDuration(37)).toBe('37ms');
    expect(goDuration(1204)).toBe('1.204s');
    expect(goDuration(2000)).toBe('2s');
  });
});
