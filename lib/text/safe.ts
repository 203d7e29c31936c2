/**
 * Text from pods (names, annotations, probe paths, messages) and other untrusted sources, made
 * safe to print on an operator's terminal. A pod author chooses those bytes, and a root terminal
 * obeys escape sequences: OSC 52 writes the clipboard, CSI moves the cursor or hides text, a C1
 * control (U+0080–U+009F) is read as ESC + letter by many terminals, a bidi override
 * (U+202E) turns what follows around, a newline forges a table row.
 *
 * Escaped is every character that is not meant to be seen as itself: the controls (C0, DEL, C1;
 * Unicode's Cc), the format characters (bidi embeddings, overrides and isolates, zero-width
 * characters, the BOM, the soft hyphen; Cf), the line and paragraph separators (U+2028, U+2029)
 * and lone surrogates. Each is written as `\xNN` (below U+0100), `\uNNNN` or `\u{NNNNN}`, so the
 * operator sees what is there.
 *
 * JSON output keeps values exact (a consumer compares them with the API's), and writes the same
 * characters as JSON `\uNNNN` escapes: JSON.stringify escapes only C0, so a C1 control or a bidi
 * override would otherwise reach the terminal as it is. A consumer that prints a decoded value
 * (`jq -r`) gets the raw characters back and must escape them itself.
 */

const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/gu;
const UNSAFE_OR_BACKSLASH = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\\]|\p{Cs}/gu;

function hex(c: string): string {
  if (c === "\\") return "\\\\";
  const code = c.codePointAt(0)!;
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, "0")}`;
  return code < 0x10000 ? `\\u${code.toString(16).padStart(4, "0")}` : `\\u{${code.toString(16)}}`;
}

/** Each UTF-16 unit of `c` as a JSON escape (a character above U+FFFF as its surrogate pair). */
function jsonEscape(c: string): string {
  let out = "";
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
}

/**
 * `text` with every unsafe character written as a visible escape, and each backslash doubled so
 * an escape shown cannot be told apart from text that only looks like one. For one field (a
 * table cell, a name in a message): a newline in it is escaped too.
 */
export function safeText(text: string): string {
  return text.replace(UNSAFE_OR_BACKSLASH, hex);
}

/**
 * `text` with every unsafe character escaped and backslashes left alone: for text that already
 * carries escapes of its own (a value Deno.inspect quoted), where doubling them would mislead.
 */
export function escapeUnsafe(text: string): string {
  return text.replace(UNSAFE, hex);
}

/**
 * JSON.stringify(value, null, space) with every unsafe character in it written as a JSON
 * `\uNNNN` escape: the same value to a JSON parser, nothing but printable text to a terminal.
 * JSON.stringify escapes newline, tab and carriage return inside strings, so those left in its
 * output are its own layout; every other such character is inside a string, so the result is
 * valid JSON.
 */
export function safeJson(value: unknown, space?: number): string {
  return safeJsonText(JSON.stringify(value, null, space));
}

/** JSON text (as JSON.stringify writes it) with every unsafe character in its strings escaped. */
export function safeJsonText(json: string): string {
  return json.replace(UNSAFE, (c) => c === "\n" || c === "\t" || c === "\r" ? c : jsonEscape(c));
}

/**
 * `rows` as columns aligned under `header`, two spaces apart and without trailing blanks (the
 * tables of `lace targets`, `lace doctor` and `lace demo`), every cell through safeText(): a
 * name a pod author chose can neither forge a row nor move the columns.
 */
export function safeTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => row.map(safeText));
  const widths = header.map((h) => h.length);
  for (const row of cells) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i], cell.length);
  }
  return [header, ...cells].map((row) =>
    row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()
  ).join("\n");
}
