import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatNumber, printTable } from './table.ts';

/**
 * The fleet bench's findings: one row per figure with its target and whether it was met, printed as a
 * table per section and written as JSON. A figure that could not be measured is NaN and `missed`, never
 * left out or filled in; a row says where a stand-in was used.
 */

/** `met`, `missed`, or `info` for a figure without a target (a floor, a breakdown). */
export type Verdict = 'met' | 'missed' | 'info';

/** One figure. */
export interface Row {
  section: string;
  figure: string;
  value: number;
  unit: string;
  /** The target as a reader would state it (`= 1`, `≤ 6`, `≥ 0.5 × ceiling`); '' without one. */
  target: string;
  verdict: Verdict;
  /** What the figure was measured on, or why it missed. */
  note?: string;
  decimals?: number;
}

/** Collects rows and prints/writes them. */
export class FleetReport {
  readonly rows: Row[] = [];
  readonly missing: { section: string; why: string }[] = [];

  /** Adds a row whose verdict is `check(value)` (a NaN value is always missed). */
  add(row: Omit<Row, 'verdict'> & { check?: (value: number) => boolean }): void {
    const { check, ...rest } = row;
    const verdict: Verdict =
      check === undefined ? 'info' : Number.isNaN(row.value) ? 'missed' : check(row.value) ? 'met' : 'missed';
    this.rows.push({ ...rest, verdict });
  }

  /** Records a section (or part) that was not measured, and why. */
  notMeasured(section: string, why: string): void {
    this.missing.push({ section, why });
  }

  /** Prints each section's rows as a table. */
  print(): void {
    const sections = [...new Set(this.rows.map((row) => row.section))];
    for (const section of sections) {
      const rows = this.rows.filter((row) => row.section === section);
      printTable(
        section,
        ['figure', 'value', 'unit', 'target', 'verdict', 'note'],
        rows.map((row) => [
          row.figure,
          formatNumber(row.value, row.decimals ?? 2),
          row.unit,
          row.target,
          row.verdict,
          row.note ?? '',
        ]),
      );
    }
    for (const gap of this.missing) process.stdout.write(`not measured: ${gap.section}: ${gap.why}\n`);
    const missed = this.rows.filter((row) => row.verdict === 'missed');
    process.stdout.write(
      `\ntargets: ${this.rows.filter((row) => row.verdict === 'met').length} met, ${missed.length} missed${missed.length ? `: ${missed.map((row) => `${row.section} / ${row.figure}`).join('; ')}` : ''}\n`,
    );
  }

  /** Writes `<dir>/<name>-<YYYY-MM-DD>.json` (the run's options and context first) and returns its path. */
  write(dir: string, context: Record<string, unknown>, name = 'fleet'): string {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${name}-${new Date().toISOString().slice(0, 10)}.json`);
    const json = {
      ...context,
      rows: this.rows.map(({ decimals: _decimals, ...row }) => ({
        ...row,
        value: Number.isNaN(row.value) ? null : row.value,
      })),
      notMeasured: this.missing,
    };
    writeFileSync(path, `${JSON.stringify(json, null, 2)}\n`);
    return path;
  }
}
