/**
 * An Error as a text log shows it: its name and message inside the log line, and below the line
 * the stack frames of Lace's own code and each cause, one per indented line. A message names
 * what others wrote (a pod, an annotation, a path), so it is escaped like every logged value
 * (text/safe.ts): a CR or LF in it stays on its line as `\x0d`/`\x0a` and cannot start a line
 * that looks like a log record. Every line below the record starts with spaces, which no record
 * does, and is escaped as well.
 */
import { errorText } from "../text/error.ts";
import { escapeUnsafe, safeText } from "../text/safe.ts";

/** The frames of the runtime, of npm packages and of the bundled Kubernetes client. */
const FOREIGN_FRAME = /\bext:|\bnode:|node_modules|registry\.npmjs\.org|\.bundle\.js/;

/**
 * `Name: message`, as the log line shows an error: escaped, and unquoted, so its backslashes are
 * doubled (safeText) and a message's own `\x0a` cannot pass for an escaped newline.
 */
function headline(error: unknown): string {
  if (!(error instanceof Error)) return safeText(errorText(error));
  const name = safeText(String(error.name));
  // Anything may sit in `message`: a formatter that throws loses the whole record.
  const message = String(error.message);
  return message === "" ? name : `${name}: ${safeText(message)}`;
}

/**
 * The frames in `error.stack` that are Lace's own code (a `file:` location outside npm
 * packages and the bundle). The stack starts with the error's name and message, which may hold
 * newlines of its own, so the frames are read after that text. A stack that does not start with
 * them (the message or name changed after V8 wrote the stack) shows no frame: the message it was
 * written with is unknown, and its lines could imitate frames, right up to the real ones.
 */
function ownFrames(error: Error): string[] {
  const stack = typeof error.stack === "string" ? error.stack : "";
  const head = error.message === "" ? String(error.name) : `${error.name}: ${error.message}`;
  if (!stack.startsWith(head)) return [];
  return stack.slice(head.length).split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("at ") && line.includes("file:"))
    .filter((line) => !FOREIGN_FRAME.test(line))
    .map(escapeUnsafe);
}

/** An error as a text log writes it: `inline` in the log line, `lines` below it (indented). */
export interface ErrorLogText {
  inline: string;
  lines: string[];
}

/**
 * `error` for a text log: its headline inline, then its own frames, then each cause (and each
 * error an AggregateError holds) with its frames, each on its own line indented below the
 * record. A cause cycle is followed once.
 */
export function errorLogText(error: Error): ErrorLogText {
  const lines: string[] = [];
  const seen = new Set<unknown>([error]);
  const below = (e: unknown, indent: string) => {
    if (!(e instanceof Error)) return;
    for (const frame of ownFrames(e)) lines.push(`${indent}  ${frame}`);
    if (e instanceof AggregateError) {
      for (const inner of e.errors) walk(inner, indent, "- ");
    }
    if (e.cause !== undefined) walk(e.cause, indent, "caused by: ");
  };
  const walk = (e: unknown, indent: string, prefix: string) => {
    if (seen.has(e)) return;
    seen.add(e);
    lines.push(`${indent}${prefix}${headline(e)}`);
    below(e, `${indent}  `);
  };
  below(error, "  ");
  return { inline: headline(error), lines };
}

/**
 * `error` on one line, for a JSON log's message: its message, then each cause's after
 * `; caused by: ` (an AggregateError's errors after `; - `), unescaped (the JSON line escapes
 * them). A cause cycle is followed once.
 */
export function errorChainInline(error: Error): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  const walk = (e: unknown, prefix: string) => {
    if (seen.has(e)) return;
    seen.add(e);
    parts.push(`${prefix}${errorText(e)}`);
    if (e instanceof AggregateError) { for (const inner of e.errors) walk(inner, "- "); }
    if (e instanceof Error && e.cause !== undefined) walk(e.cause, "caused by: ");
  };
  walk(error, "");
  return parts.join("; ");
}
