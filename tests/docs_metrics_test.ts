/**
 * The metrics the README and docs/ name (`lace_x`, `lace_x{label="v"}`) must be registered by
 * the agent or `lace netcheck`, with the labels named.
 */
import assert from "node:assert/strict";
import { metricProblem } from "./helpers/docs_metrics.ts";
import { pagesNameNothingMissing } from "./helpers/docs_page_problems.ts";

pagesNameNothingMissing("metrics");

Deno.test("metricProblem() names a metric nobody registers and a label it lacks", () => {
  const metrics = new Map([["lace_x_total", new Set(["reason"])], ["lace_h", new Set<string>()]]);
  assert.equal(metricProblem('lace_x_total{reason="a"|"b"}', metrics), undefined);
  assert.equal(metricProblem("lace_h_bucket", metrics), undefined);
  assert.equal(metricProblem("lace_x_total 1", metrics), undefined);
  assert.match(metricProblem("lace_y", metrics)!, /lace_y is no metric/);
  assert.match(metricProblem("lace_x_total{network}", metrics)!, /has no label network/);
});
