import assert from "node:assert/strict";
import { promqlMetricNames, withoutGrafanaVariables } from "./promql_names.ts";

const names = (expr: string) => [...promqlMetricNames(expr)].sort();

Deno.test("promqlMetricNames() finds the metrics and not functions, labels, strings or numbers", () => {
  assert.deepEqual(
    names(
      'histogram_quantile(0.99, sum by (le, job) (rate(lace_x_bucket{job="$job", a=~"b|c"}' +
        "[$__rate_interval])))",
    ),
    ["lace_x_bucket"],
  );
  assert.deepEqual(
    names(
      '(lace_a{job="j"} == 0 or on(job, instance) (up{job="j"} == 1 unless on(job, instance) ' +
        "lace_b)) unless on(job, instance) lace_c == 1",
    ),
    ["lace_a", "lace_b", "lace_c", "up"],
  );
  assert.deepEqual(names("changes(process_start_time_seconds[1h]) >= 3 offset 5m"), [
    "process_start_time_seconds",
  ]);
  assert.deepEqual(names("sum(lace_a) by (reason) / ignoring(x) group_left lace_b * 1e3"), [
    "lace_a",
    "lace_b",
  ]);
  assert.deepEqual(names('label_values(lace_build_info{job="$job"}, instance)'), [
    "lace_build_info",
  ]);
  assert.deepEqual(names("label_values(job)"), []);
});

Deno.test("withoutGrafanaVariables() leaves PromQL promtool can parse", () => {
  assert.equal(
    withoutGrafanaVariables('rate(a{job="$job", i=~"${instance}"}[$__rate_interval])'),
    'rate(a{job="x", i=~"x"}[5m])',
  );
});
