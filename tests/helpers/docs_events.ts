/**
 * The Event reasons the code records (read from lib/'s sources) and those a page names, so that
 * each side can be held to the other.
 */
import { join } from "node:path";
import { codeSpans, tables } from "./docs_markup.ts";
import { REPO } from "./docs_pages.ts";

/**
 * The Event reasons the code records: the second argument of the recorder's warn() and normal(),
 * of the follower's emit(), and the chaining reasons' table.
 */
export function recordedEventReasons(source: string): Set<string> {
  const reasons = new Set<string>();
  const patterns = [
    /\.(?:warn|normal)\(\s*[^;"]{1,120}?,\s*"([A-Z][A-Za-z]+)"\s*,/g,
    /emit\(\s*"(?:Warning|Normal)",\s*"([A-Z][A-Za-z]+)"/g,
  ];
  for (const p of patterns) for (const m of source.matchAll(p)) reasons.add(m[1]);
  const table = /EVENT_REASONS[^{]*\{([^}]*)\}/.exec(source)?.[1] ?? "";
  for (const m of table.matchAll(/:\s*"([A-Z][A-Za-z]+)"/g)) reasons.add(m[1]);
  return reasons;
}

const PRODUCT_SOURCE = (() => {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(join(REPO, dir))) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) walk(path);
      else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
        texts.push(Deno.readTextFileSync(join(REPO, path)));
      }
    }
  };
  walk("lib");
  return texts.join("\n");
})();

/** Every Event reason lib/ records. */
export const EVENT_REASONS = recordedEventReasons(PRODUCT_SOURCE);

/** The kubelet's and controllers' own Event reasons, which the pages name too. */
export const KUBERNETES_REASONS = new Set([
  "FailedPreStopHook",
  "FailedPostStartHook",
  "Unhealthy",
  "FailedCreate",
]);

/** Event reasons a page names: `Event \`X\`` in prose, and the first column of Event tables. */
export function namedEventReasons(prose: string): string[] {
  const out = [...prose.matchAll(/\bEvents?\s+`([A-Za-z]+)`/g)].map((m) => m[1]);
  for (const table of tables(prose)) {
    if (!/^Event\b/.test(table[0][0] ?? "")) continue;
    for (const row of table.slice(1)) {
      for (const span of codeSpans(row[0])) out.push(span.text.split(" ")[0]);
    }
  }
  return out;
}
