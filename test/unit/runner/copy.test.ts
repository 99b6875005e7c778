import { describe, expect, it } from 'vitest';
import { loaderOf, mappedSharedObjects, sonameOf } from '../../../src/runner/copy.ts';

const MAPS = `00400000-00401000 r--p 00000000 08:01 1 /captf/bin/runner
7f0000000000-7f0000001000 r--p 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30
7f0000001000-7f0000002000 r-xp 00001000 08:01 2 /usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30
7f0000003000-7f0000004000 r--p 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000005000-7f0000006000 rw-p 00000000 00:00 0 [heap]
7f0000007000-7f0000008000 r--p 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
7f0000009000-7f000000a000 r--p 00000000 08:01 5 /usr/lib/locale/C.utf8/LC_CTYPE`;

describe('what copy takes along', () => {
  it('lists each mapped shared object once, nothing else', () => {
    expect(mappedSharedObjects(MAPS)).toEqual([
      '/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30',
      '/usr/lib/x86_64-linux-gnu/libc.so.6',
      '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2',
    ]);
  });

  it('finds the loader', () => {
    expect(loaderOf(mappedSharedObjects(MAPS))).toBe('/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2');
    expect(loaderOf(['/lib/libc.so.6'])).toBeUndefined();
  });

  it.each([
    { path: '/usr/lib/libstdc++.so.6.0.30', soname: 'libstdc++.so.6' },
    { path: '/usr/lib/libc.so.6', soname: 'libc.so.6' },
    { path: '/usr/lib/ld-linux-x86-64.so.2', soname: 'ld-linux-x86-64.so.2' },
  ])('$path is looked up as $soname', ({ path, soname }) => {
    expect(sonameOf(path)).toBe(soname);
  });
});
