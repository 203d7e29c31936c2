/**
 * The metric names a PromQL expression reads (an alert's `expr`, a Grafana panel's query), for
 * the test that every name the chart's dashboard and alerts use is one the agent exports. Not a
 * parser: promtool checks the syntax; this strips what cannot be a metric name (strings, label
 * matchers, ranges, grouping labels, Grafana's variables) and keeps the identifiers that are not
 * a function, a keyword or a number.
 */

const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "atan2",
  "inf",
  "nan",
]);

/** Grafana's template variables ($job, ${job}, $__rate_interval) replaced by what PromQL takes. */
export function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\[\s*\$\{?__\w+\}?\s*\]/g, "[5m]").replace(/\$\{?\w+\}?/g, "x");
}

/** The metric names `expr` reads; Grafana's label_values(METRIC, LABEL) reads METRIC. */
export function promqlMetricNames(expr: string): Set<string> {
  let e = withoutGrafanaVariables(expr)
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\blabel_values\(\s*(?:([^,()]*?)\s*,\s*)?[a-zA-Z_]\w*\s*\)/g, "$1")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  e = e.replace(/(?<![\w.:])\d[\w.]*/g, " "); // numbers and durations
  const names = new Set<string>();
  for (const m of e.matchAll(/(?<![\w:])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] !== undefined || KEYWORDS.has(m[1].toLowerCase())) continue;
    names.add(m[1]);
  }
  return names;
}
