/**
 * What every figure hands back, and how the run is shown: one human table
 * (figure, measurement, value, goal) and one JSON document. Goals are judged
 * here from the measured values only; a missed goal carries its reason.
 */

/** One line of the human table. */
export interface Row {
  measurement: string;
  value: string;
  /** The goal this row is judged against, if any. */
  goal?: string;
}

/** A goal judged on this run's measurements. */
export interface Goal {
  figure: string;
  name: string;
  /** The goal as stated, e.g. "≤ 150 ns". */
  target: string;
  /** The measured value it was judged on, as shown. */
  measured: string;
  met: boolean;
  /** Why it was missed (what was found), or a note on how it was judged. */
  reason?: string;
}

export interface FigureResult {
  /** Short name, as given to --only. */
  name: string;
  title: string;
  rows: Row[];
  goals: Goal[];
  /** Every measurement, for the JSON document. */
  data: Record<string, unknown>;
}

export interface FigureFailure {
  name: string;
  title: string;
  error: string;
}

/** Judges `measured` against an upper bound and returns the goal. */
export function atMost(
  figure: string,
  name: string,
  measured: number,
  limit: number,
  unit: string,
  missedReason?: string,
): Goal {
  const met = measured <= limit;
  return {
    figure,
    name,
    target: `≤ ${limit} ${unit}`.trim(),
    measured: `${fmt(measured)} ${unit}`.trim(),
    met,
    ...(met ? {} : { reason: missedReason ?? "measured above the goal" }),
  };
}

/** A number for the table: integers as is, others with up to 3 significant decimals. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return value.toFixed(digits);
}

/** The human table: one section per figure, then the goals with met/missed. */
export function formatTable(results: FigureResult[], failures: FigureFailure[]): string {
  const lines: string[][] = [["Figure", "Measurement", "Value", "Goal"]];
  for (const r of results) {
    r.rows.forEach((row, i) => {
      lines.push([i === 0 ? r.title : "", row.measurement, row.value, row.goal ?? ""]);
    });
  }
  for (const f of failures) lines.push([f.title, "FAILED", f.error.split("\n")[0], ""]);
  const widths = lines[0].map((_, c) => Math.max(...lines.map((l) => l[c].length)));
  const render = (l: string[]) => l.map((cell, c) => cell.padEnd(widths[c])).join("  ").trimEnd();
  const out = [render(lines[0]), widths.map((w) => "-".repeat(w)).join("  ")];
  for (const l of lines.slice(1)) out.push(render(l));
  const goals = results.flatMap((r) => r.goals);
  if (goals.length) {
    out.push("", "Goals:");
    for (const g of goals) {
      const status = g.met ? "met   " : "MISSED";
      const why = g.reason ? ` (${g.reason})` : "";
      out.push(`  ${status} ${g.figure}: ${g.name}: ${g.measured}, goal ${g.target}${why}`);
    }
  }
  return out.join("\n");
}
