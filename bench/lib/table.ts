/**
 * Prints a bench's figures as an aligned plain-text table, then its ratios, so the output reads the same
 * in a terminal and pasted into a report.
 */

/** One cell: text as is, numbers with a fixed number of decimals (see `decimals`). */
export type Cell = string | number;

/** Formats a number with thousands separators and `decimals` decimals; `-` for a figure not measured (NaN). */
export function formatNumber(value: number, decimals = 0): string {
  if (Number.isNaN(value)) return '-';
  if (!Number.isFinite(value)) return String(value);
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/**
 * Prints `rows` under `headers`; the first column is left-aligned, the others right-aligned. Numbers are
 * formatted with `decimals[column]` decimals (default 0).
 */
export function printTable(
  title: string,
  headers: readonly string[],
  rows: readonly (readonly Cell[])[],
  decimals: readonly number[] = [],
): void {
  const text = rows.map((row) =>
    row.map((cell, column) => (typeof cell === 'number' ? formatNumber(cell, decimals[column] ?? 0) : cell)),
  );
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...text.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ')
      .trimEnd();
  process.stdout.write(`\n${title}\n${line(headers)}\n${line(widths.map((w) => '-'.repeat(w)))}\n`);
  for (const row of text) process.stdout.write(`${line(row)}\n`);
}

/** A ratio with three significant digits (0.0123, 1.23, 12.3, 123). */
export function formatRatio(ratio: number): string {
  if (!Number.isFinite(ratio) || ratio === 0) return String(ratio);
  const decimals = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(ratio))));
  return formatNumber(ratio, decimals);
}

/** Prints one ratio line: `ratio name: 12.3x  (what it compares)`. */
export function printRatio(name: string, ratio: number, meaning: string): void {
  process.stdout.write(`ratio ${name}: ${formatRatio(ratio)}x  (${meaning})\n`);
}
