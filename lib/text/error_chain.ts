/**
 * An error as the user should read it: its message, then each cause in turn,
 * because the hint that says what to do is often in a cause (a pod source
 * that failed to start wraps the reason its directory cannot be read).
 */
import { errorText } from "./error.ts";
import { escapeUnsafe } from "./safe.ts";

/**
 * The message of `error` and of every cause below it, one per line: a message names what others
 * wrote (a pod, a path), so its controls, newlines included, are escaped (text/safe.ts).
 */
export function errorChain(error: unknown): string {
  const lines: string[] = [];
  const seen = new Set<unknown>();
  const walk = (e: unknown, indent: string, prefix: string) => {
    if (seen.has(e)) return;
    seen.add(e);
    lines.push(`${indent}${prefix}${escapeUnsafe(errorText(e))}`);
    if (e instanceof AggregateError) {
      for (const inner of e.errors) walk(inner, `${indent}  `, "- ");
    }
    if (e instanceof Error && e.cause !== undefined) walk(e.cause, indent, "caused by: ");
  };
  walk(error, "", "");
  return lines.join("\n");
}
