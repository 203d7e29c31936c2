/**
 * Assertions shared by the spec's unit tests: the CNI error a call throws, and
 * its code.
 */
import assert from "node:assert/strict";
import { CniError } from "./spec.ts";

/**
 * The code of the CniError a call throws, whose message must match `why`: any refusal gives a
 * code, the message says which (fails the test when it throws none, another error or another
 * reason).
 */
export function codeOf(fn: () => unknown, why: RegExp): number {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CniError, `expected CniError, got ${e}`);
    assert.match(e.message, why);
    return e.code;
  }
  assert.fail("expected a CniError");
}

/** The CniError a call throws (fails the test when it throws none or another error). */
export function errorOf(fn: () => unknown): CniError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CniError, `expected CniError, got ${e}`);
    return e;
  }
  assert.fail("expected a CniError");
}
