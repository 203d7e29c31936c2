/**
 * Assertions shared by the spec's unit tests: the CNI error a call throws, and
 * its code.
 */
import assert from "node:assert/strict";
import { CniError } from "./spec.ts";

/** The code of the CniError a call throws (fails the test when it throws none or another error). */
export function codeOf(fn: () => unknown): number {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CniError, `expected CniError, got ${e}`);
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
