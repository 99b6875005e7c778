import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// What users read (the README, docs/, and the manifests they install, comments included) speaks to them,
// not to the project's tracker or its internal notes: "see issue 16" or "../shared/notes" means nothing to a
// platform engineer reading `kubectl get -o yaml` or the install guide.

const root = join(import.meta.dirname, '..', '..', '..');

/** Tracked files a user reads: the README, docs/, examples/ and infra/, plus serverless.yml. */
function userFacingFiles(): string[] {
  const tracked = execFileSync(
    'git',
    ['ls-files', 'README.md', 'docs', 'examples', 'infra', 'serverless.yml'],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  return tracked.split('\n').filter((path) => /\.(md|ya?ml|json|tf)$|Dockerfile$/.test(path));
}

/** "issue 16", "issue #16", "Issue 23 item 6", "issues 22 and 26"; and paths into the internal notes. */
const TRACKER = /\bissues? #?\d+|shared\/notes|\.\.\/shared\//i;

describe('user-facing text names no issue or internal note', () => {
  it('the README, docs/, examples/, infra/ and serverless.yml', () => {
    const files = userFacingFiles();
    expect(files.length).toBeGreaterThan(20);
    const hits = files.flatMap((path) =>
      readFileSync(join(root, path), 'utf8')
        .split('\n')
        .flatMap((line, index) => (TRACKER.test(line) ? [`${path}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(hits, 'say what the text means to a user instead').toEqual([]);
  });

  it('the pattern catches the forms it is meant to catch', () => {
    for (const text of [
      '(issue 16)',
      'Issue 23 item 6:',
      'issue #13',
      'issues 22 and 26',
      '../shared/notes/X.md',
    ]) {
      expect(TRACKER.test(text), text).toBe(true);
    }
    for (const text of ['an issue with the API server', 'issued tokens', 'GitHub issues']) {
      expect(TRACKER.test(text), text).toBe(false);
    }
  });
});
