/**
 * The chart's values.yaml as the docs tests read it: which dotted names are its keys, and its
 * leaves, which the chart README's values table must name.
 */
import { join } from "node:path";
import { parse } from "yaml";
import { REPO } from "./docs_pages.ts";

export const VALUES = parse(
  Deno.readTextFileSync(join(REPO, "deploy/helm/lace/values.yaml")),
) as Record<string, unknown>;

/** The value at `path` in values.yaml; `free` when the path goes into a list or an empty map. */
export function valueAt(
  values: Record<string, unknown>,
  path: string,
): { found: boolean; value?: unknown } {
  let cur: unknown = values;
  for (const key of path.split(".")) {
    if (Array.isArray(cur) || (isMap(cur) && Object.keys(cur).length === 0)) return { found: true };
    if (!isMap(cur) || !(key in cur)) return { found: false };
    cur = cur[key];
  }
  return { found: true, value: cur };
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Dotted names that start like a chart key but are something else, and what they are. */
const NOT_CHART_KEYS: Record<string, string> = {
  "netcheck.connect": "a JUnit classname of lace netcheck (lib/netcheck/report/formats.ts)",
  "netcheck.latency": "a JUnit classname of lace netcheck",
  "netcheck.bandwidth": "a JUnit classname of lace netcheck",
  "netcheck.isolation": "a JUnit classname of lace netcheck",
};

/** The chart key a span names (`node.podCIDRs`, `image.tag=0.1.0`), or undefined. */
export function chartKey(span: string): string | undefined {
  const m = /^([A-Za-z]+)\.([A-Za-z0-9.]+)(=.*)?$/.exec(span);
  if (!m || !isMap(VALUES[m[1]])) return undefined;
  const key = `${m[1]}.${m[2]}`.replace(/\.$/, "");
  return key in NOT_CHART_KEYS ? undefined : key;
}

/** Every leaf of values.yaml: maps are walked, lists and empty maps are leaves. */
export function valueLeaves(values: Record<string, unknown>, prefix = ""): string[] {
  return Object.entries(values).flatMap(([k, v]) => {
    const path = prefix ? `${prefix}.${k}` : k;
    return isMap(v) && Object.keys(v).length > 0 ? valueLeaves(v, path) : [path];
  });
}
