import assert from "node:assert/strict";
import {
  bundleInputs,
  formatBundleRecord,
  parseBundleRecord,
  recordInputsProblem,
  sha256Hex,
} from "./bundle_record.ts";

const RECORD = { ...bundleInputs("entry", "lock", "2.9.6"), bundle: sha256Hex("bundle") };

Deno.test("sha256Hex() is the sha256 of the bytes in lowercase hex", () => {
  assert.equal(
    sha256Hex("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(sha256Hex(new TextEncoder().encode("abc")), sha256Hex("abc"));
});

Deno.test("bundleInputs() changes with the entry, the lockfile and the Deno version", () => {
  const base = bundleInputs("entry", "lock", "2.9.6");
  assert.deepEqual(base, bundleInputs("entry", "lock", "2.9.6"));
  assert.notDeepEqual(base, bundleInputs("entry2", "lock", "2.9.6"));
  assert.notDeepEqual(base, bundleInputs("entry", "lock2", "2.9.6"));
  assert.notDeepEqual(base, bundleInputs("entry", "lock", "2.9.7"));
});

Deno.test("parseBundleRecord() reads what formatBundleRecord() writes", () => {
  assert.deepEqual(parseBundleRecord(JSON.parse(formatBundleRecord(RECORD))), RECORD);
  assert.ok(formatBundleRecord(RECORD).endsWith("}\n"));
});

Deno.test("parseBundleRecord() names the first field that is wrong", () => {
  assert.throws(() => parseBundleRecord(null), /not a JSON object/);
  assert.throws(() => parseBundleRecord([]), /not a JSON object/);
  assert.throws(() => parseBundleRecord({ ...RECORD, deno: "latest" }), /"deno" is not a Deno/);
  assert.throws(() => parseBundleRecord({ ...RECORD, entry: "abc" }), /"entry" is not a sha256/);
  assert.throws(
    () => parseBundleRecord({ ...RECORD, lockfile: RECORD.lockfile.toUpperCase() }),
    /"lockfile" is not a sha256/,
  );
  const { bundle: _, ...noBundle } = RECORD;
  assert.throws(() => parseBundleRecord(noBundle), /"bundle" is not a sha256/);
});

Deno.test("recordInputsProblem() names each input that differs and skips those not given", () => {
  assert.equal(recordInputsProblem(RECORD, bundleInputs("entry", "lock", "2.9.6")), undefined);
  assert.equal(
    recordInputsProblem(RECORD, bundleInputs("entry2", "lock2", "2.9.7")),
    "made from other inputs (Deno 2.9.7, not 2.9.6, the entry, the lockfile)",
  );
  assert.equal(recordInputsProblem(RECORD, { deno: "2.9.6" }), undefined);
  assert.match(recordInputsProblem(RECORD, { deno: "2.9.7" })!, /Deno 2\.9\.7, not 2\.9\.6\)/);
});
