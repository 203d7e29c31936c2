import assert from "node:assert/strict";
import { lastHitText, servesText } from "./targets.ts";

Deno.test("lastHitText() says how long ago, never, or unknown", () => {
  assert.equal(lastHitText(75.9), "1m15s ago");
  assert.equal(lastHitText(0.4), "0s ago");
  assert.equal(lastHitText(null), "never");
  assert.equal(lastHitText(undefined), "-");
});

Deno.test("servesText() names the container and the probe or hook, or - when unknown", () => {
  assert.equal(servesText({ container: "app", probe: "readiness" }), "app/readiness");
  assert.equal(servesText({ container: "proxy", probe: "preStop" }), "proxy/preStop");
  assert.equal(servesText({ container: "", probe: "postStart" }), "postStart");
  assert.equal(servesText({}), "-");
});
