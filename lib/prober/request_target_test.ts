import assert from "node:assert/strict";
import { requestTarget } from "./request_target.ts";

Deno.test("requestTarget() keeps an ordinary path and query as they are", () => {
  assert.equal(requestTarget("/healthz?full=1&x=%41"), "/healthz?full=1&x=%41");
});

Deno.test("requestTarget() percent-encodes CR and LF, so a path cannot add headers", () => {
  const target = requestTarget("/ok HTTP/1.0\r\nX-Injected: 1\r\n\r\n");
  assert.equal(target, "/ok%20HTTP/1.0%0D%0AX-Injected:%201%0D%0A%0D%0A");
  assert.doesNotMatch(target, /[\r\n ]/);
});

Deno.test("requestTarget() percent-encodes controls, DEL and non-ASCII as UTF-8 bytes", () => {
  assert.equal(requestTarget("/\x1b]52;c;x\x07\x7fé"), "/%1B]52;c;x%07%7F%C3%A9");
});

Deno.test("requestTarget() starts a path without a slash with one", () => {
  assert.equal(requestTarget("healthz"), "/healthz");
  assert.equal(requestTarget(""), "/");
});
