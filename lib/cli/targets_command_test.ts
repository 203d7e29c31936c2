import assert from "node:assert/strict";
import { lastHitText } from "./targets_command.ts";

Deno.test("lastHitText() says how long ago, never, or unknown", () => {
  assert.equal(lastHitText(75.9), "1m15s ago");
  assert.equal(lastHitText(0.4), "0s ago");
  assert.equal(lastHitText(null), "never");
  assert.equal(lastHitText(undefined), "-");
});
