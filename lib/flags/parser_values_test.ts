/** The flag parser's value types: duration, mark, boolean, integer and oneOf(). */
import assert from "node:assert/strict";
import { boolean, duration, integer, mark, oneOf } from "./parser.ts";
import { MAX_TIMER_MS } from "../time/duration.ts";

Deno.test("the duration parser refuses negative values and values no timer can wait", () => {
  assert.equal(duration.parse("1m30s"), 90_000);
  assert.throws(() => duration.parse("-1s"), /must not be negative/);
  assert.throws(() => duration.parse("600h"), /must be at most 596h, the longest a timer can wait/);
  assert.throws(() => duration.parse("5"), /must be a duration/);
});

Deno.test("the mark parser reads decimal and hex and shows hex", () => {
  assert.equal(mark.parse("4096"), 0x1000);
  assert.equal(mark.parse("0x1000"), 4096);
  assert.equal(mark.format(0x1000), "0x1000");
});

Deno.test("the boolean parser reads true/false, 1/0, yes/no, on/off in any case, and nothing else", () => {
  for (const t of ["1", "true", "TRUE", "yes", "On"]) assert.equal(boolean.parse(t), true, t);
  for (const t of ["0", "false", "No", "off"]) assert.equal(boolean.parse(t), false, t);
  assert.throws(() => boolean.parse("maybe"), new Error(`must be true or false: "maybe"`));
});

Deno.test("the integer parser takes only decimal digits", () => {
  assert.equal(integer.parse("0"), 0);
  assert.equal(integer.parse("65535"), 65535);
  for (const t of ["-1", "1.5", " 1", "1x", "x1", "", "0x10"]) {
    assert.throws(() => integer.parse(t), new Error(`must be a whole number: "${t}"`), t);
  }
});

Deno.test("the mark parser takes only decimal or 0x hex", () => {
  assert.equal(mark.parse("0xFF"), 255);
  for (const t of ["0x", "0X10", "12a", "a12", "0x1g", "-1", ""]) {
    assert.throws(() => mark.parse(t), new Error(`must be a decimal or 0x hex number: "${t}"`), t);
  }
});

Deno.test("the duration parser takes 0 and the longest timer, and refuses one millisecond more", () => {
  assert.equal(duration.parse("0s"), 0);
  assert.equal(duration.parse(`${MAX_TIMER_MS}ms`), MAX_TIMER_MS);
  assert.throws(
    () => duration.parse(`${MAX_TIMER_MS + 1}ms`),
    new Error(`must be at most 596h, the longest a timer can wait: "${MAX_TIMER_MS + 1}ms"`),
  );
  assert.throws(() => duration.parse("-1ms"), new Error(`must not be negative: "-1ms"`));
  assert.throws(
    () => duration.parse("soon"),
    new Error(`must be a duration such as 500ms, 5s or 1m30s: "soon"`),
  );
});

Deno.test("oneOf() takes a listed word only and names the choices", () => {
  const level = oneOf(["a", "b"] as const);
  assert.equal(level.parse("b"), "b");
  assert.equal(level.metavar, "a|b");
  assert.throws(() => level.parse("B"), new Error(`must be one of a, b: "B"`));
});
