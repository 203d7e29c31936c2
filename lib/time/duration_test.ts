import assert from "node:assert/strict";
import { formatDuration, parseDuration } from "./duration.ts";

Deno.test("parseDuration() reads single units into milliseconds", () => {
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("5s"), 5000);
  assert.equal(parseDuration("1m"), 60_000);
  assert.equal(parseDuration("1h"), 3_600_000);
});

Deno.test("parseDuration() reads combinations and fractions as Go does", () => {
  assert.equal(parseDuration("1m30s"), 90_000);
  assert.equal(parseDuration("1h2m3s4ms"), 3_723_004);
  assert.equal(parseDuration("1.5s"), 1500);
  assert.equal(parseDuration(".5s"), 500);
  assert.equal(parseDuration("300us"), 0.3);
  assert.equal(parseDuration("2000000ns"), 2);
});

Deno.test("parseDuration() accepts a sign and a bare zero as Go does", () => {
  assert.equal(parseDuration("-1s"), -1000);
  assert.equal(parseDuration("+1s"), 1000);
  assert.equal(parseDuration("0"), 0);
});

Deno.test("parseDuration() rejects numbers without a unit, spaces and garbage", () => {
  for (const bad of ["", "5", "5x", "s", "1m 2s", " 1s", "1d", "--1s", "1.2.3s", "."]) {
    assert.throws(() => parseDuration(bad), TypeError, `"${bad}"`);
  }
});

Deno.test("formatDuration() writes what parseDuration() reads back", () => {
  for (const [ms, text] of [[300_000, "5m"], [30_000, "30s"], [5, "5ms"], [90_000, "1m30s"]]) {
    assert.equal(formatDuration(ms as number), text);
    assert.equal(parseDuration(text as string), ms);
  }
  assert.equal(formatDuration(0), "0s");
});
