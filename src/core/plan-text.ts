import type { TerraformPlan } from '../schemas/kinds/terraform-plan.ts';

/**
 * The readable plan of `kubectl captf plan` (DESIGN.md section 11): a TerraformPlan's `spec.changes` as
 * OpenTofu's own words per resource address, deletes and replaces first (as the runner ordered them), the
 * attribute paths that change and those that force a replacement, the output changes and the exact counts.
 * Paths only, never values: the plan holds none.
 */

const SIGNS: Readonly<Record<string, string>> = {
  create: '+',
  update: '~',
  delete: '-',
  replace: '-/+',
  read: '<=',
  forget: '.',
};

/** Lines describing `plan` (pure). */
export function planLines(plan: TerraformPlan): string[] {
  const { spec } = plan;
  const phase = plan.status?.phase ?? 'Pending';
  const lines = [
    `TerraformPlan ${plan.metadata.name}  phase ${phase}${spec.approved ? `  approved by ${spec.approvedBy ?? '?'}` : ''}`,
    `  for ${spec.targetRef.kind}/${spec.targetRef.name}, made by Job ${spec.job}` +
      (spec.requestedBy
        ? `, requested by ${spec.requestedBy.manager ?? '(unknown manager)'} (generation ${spec.requestedBy.generation}${spec.requestedBy.time ? ` at ${spec.requestedBy.time}` : ''})`
        : ''),
    `  digest ${spec.digest}`,
    `  ${spec.add} to add, ${spec.change} to change, ${spec.destroy} to destroy${spec.destructive ? '  (DESTRUCTIVE)' : ''}`,
  ];
  const changes = spec.changes;
  if (changes === undefined) {
    lines.push(
      '',
      `  The readable changes are absent (the Job's log could not be read); they are in the Job's log while it exists: kubectl logs job/${spec.job} -c source`,
    );
    return lines;
  }
  lines.push('');
  for (const change of changes.resources) {
    const sign = SIGNS[change.action] ?? '?';
    lines.push(
      `  ${sign.padEnd(3)} ${change.address}  ${change.action}${change.reason ? ` (${change.reason})` : ''}`,
    );
    if (change.replacePaths?.length)
      lines.push(`        forces replacement: ${change.replacePaths.join(', ')}`);
    if (change.paths?.length)
      lines.push(
        `        changes: ${change.paths.join(', ')}${change.morePaths ? ` and ${change.morePaths} more` : ''}`,
      );
  }
  if (changes.omittedResources > 0)
    lines.push(`  … ${changes.omittedResources} more resource changes not listed`);
  if (changes.outputs.length > 0)
    lines.push(`  outputs: ${changes.outputs.map((o) => `${o.name} (${o.action})`).join(', ')}`);
  const c = changes.counts;
  lines.push(
    '',
    `  counts: ${c.resources} resources: ${c.create} create, ${c.update} update, ${c.delete} delete, ${c.replace} replace, ${c.read} read, ${c.forget} forget; ${c.outputs} outputs`,
  );
  return lines;
}
