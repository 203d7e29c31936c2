import assert from "node:assert/strict";
import { defaultNetcheckOptions, OptionsError, validateNetcheckOptions } from "./options.ts";

Deno.test("validateNetcheckOptions() accepts the defaults", () => {
  const o = defaultNetcheckOptions();
  assert.equal(validateNetcheckOptions(o), o);
});

Deno.test("validateNetcheckOptions() refuses a value no flag sets, naming it", () => {
  assert.throws(
    () => validateNetcheckOptions({ ...defaultNetcheckOptions(), bandwidthRetries: -1 }),
    (e: Error) =>
      e instanceof OptionsError && /bandwidthRetries must not be negative/.test(e.message),
  );
});
