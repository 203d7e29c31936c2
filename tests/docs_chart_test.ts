/**
 * The chart keys the README and docs/ name (in backticks and after `--set`) must be keys of
 * values.yaml, and the chart README's values table, which `deno task chart-docs` writes, must
 * name every key with its default.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { valueAt, valueLeaves, VALUES } from "./helpers/docs_chart_values.ts";
import { codeSpans, tables } from "./helpers/docs_markup.ts";
import { pagesNameNothingMissing } from "./helpers/docs_page_problems.ts";
import { CHART_README, PAGES } from "./helpers/docs_pages.ts";

pagesNameNothingMissing("chart");

Deno.test("the values table of the chart's README names every chart key, with its default", () => {
  const page = PAGES.find((p) => p.path === CHART_README)!;
  const table = tables(page.prose).find((t) => t[0][0] === "key" && t[0][2] === "default");
  assert.ok(table, `${CHART_README} has no table headed | key | type | default | description |`);
  const named = new Set<string>();
  const wrong: string[] = [];
  for (const row of table.slice(1)) {
    const keys = codeSpans(row[0]).map((s) => s.text);
    // A section's row (no default) names no key: the keys under it have rows of their own.
    if (row[2] === "") continue;
    for (const key of keys) named.add(key);
    const defaults = codeSpans(row[2]);
    if (keys.length !== 1 || defaults.length !== 1 || row[2] !== `\`${defaults[0].text}\``) {
      continue;
    }
    const text = defaults[0].text;
    const actual = valueAt(VALUES, keys[0]).value;
    const same = text === actual || JSON.stringify(parse(text)) === JSON.stringify(actual);
    if (!same) {
      wrong.push(`${keys[0]}: the table says ${text}, values.yaml ${JSON.stringify(actual)}`);
    }
  }
  const covered = (leaf: string) => {
    const parts = leaf.split(".");
    return parts.some((_, i) => named.has(parts.slice(0, i + 1).join(".")));
  };
  assert.deepEqual(valueLeaves(VALUES).filter((l) => !covered(l)), [], "keys the table misses");
  assert.deepEqual(
    [...named].filter((k) => !valueAt(VALUES, k).found),
    [],
    "keys that do not exist",
  );
  assert.deepEqual(wrong, [], "defaults that differ from values.yaml");
});

Deno.test("valueAt() and valueLeaves() walk maps, and stop at lists and empty maps", () => {
  const values = { a: { b: 1, c: {}, d: [] }, e: "x" };
  assert.deepEqual(valueLeaves(values), ["a.b", "a.c", "a.d", "e"]);
  assert.deepEqual(valueAt(values, "a.b"), { found: true, value: 1 });
  assert.equal(valueAt(values, "a.c.anything").found, true);
  assert.equal(valueAt(values, "a.z").found, false);
  assert.equal(valueAt(values, "e.z").found, false);
});
