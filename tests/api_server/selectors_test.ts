import assert from "node:assert/strict";
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from "./selectors.ts";
import { ApiError } from "./status.ts";

Deno.test("label selectors support equality, sets and existence", () => {
  const labels = { app: "web", tier: "front" };
  const cases: [string, boolean][] = [
    ["app=web", true],
    ["app==web,tier!=back", true],
    ["app in (web, api)", true],
    ["app notin (web)", false],
    ["tier", true],
    ["!tier", false],
    ["missing!=x", true],
    ["missing in (x)", false],
    ["", true],
  ];
  for (const [text, expected] of cases) {
    assert.equal(matchesLabels(parseLabelSelector(text), labels), expected, text);
  }
});

Deno.test("a malformed label selector is a 400", () => {
  assert.throws(
    () => parseLabelSelector("app in ()"),
    (e) => e instanceof ApiError && e.code === 400,
  );
});

Deno.test("field selectors compare dotted paths, absent fields as empty", () => {
  const pod = { metadata: { name: "a" }, spec: { nodeName: "n1" } };
  const fields = ["metadata.name", "spec.nodeName", "status.phase"];
  assert.equal(matchesFields(parseFieldSelector("spec.nodeName=n1", fields), pod), true);
  assert.equal(matchesFields(parseFieldSelector("status.phase=", fields), pod), true);
  assert.equal(matchesFields(parseFieldSelector("metadata.name!=a", fields), pod), false);
  assert.throws(() => parseFieldSelector("spec.other=x", fields), /field label not supported/);
});
