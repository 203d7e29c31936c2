import assert from "node:assert/strict";
import { apiErrorText, apiStatus } from "./api_error.ts";

Deno.test("apiStatus() reads the HTTP status from code or statusCode, and nothing else", () => {
  assert.equal(apiStatus(Object.assign(new Error("gone"), { code: 404 })), 404);
  assert.equal(apiStatus(Object.assign(new Error("busy"), { statusCode: 503 })), 503);
  assert.equal(apiStatus(Object.assign(new Error("down"), { code: "ECONNREFUSED" })), undefined);
  assert.equal(apiStatus(undefined), undefined);
});

Deno.test("apiErrorText() adds the status or code to the message, and reads a Status object", () => {
  assert.equal(apiErrorText(Object.assign(new Error("busy"), { statusCode: 503 })), "busy (503)");
  assert.equal(
    apiErrorText(Object.assign(new Error("down"), { code: "ECONNREFUSED" })),
    "down (ECONNREFUSED)",
  );
  assert.equal(apiErrorText(new Error("plain")), "plain");
  assert.equal(
    apiErrorText({ kind: "Status", message: "too old resource version" }),
    "too old resource version",
  );
  assert.equal(apiErrorText("text"), "text");
});
