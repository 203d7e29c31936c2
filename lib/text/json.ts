/**
 * Checks for JSON that came from outside (a pod manifest, a CNI request, a
 * network configuration): what a value is before it is trusted as one.
 */

/** True for a plain JSON object: not null, not an array. */
export function isObject<V = unknown>(value: unknown): value is Record<string, V> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** True when `value` nests objects or arrays more than `limit` levels deep; never recurses. */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * A value that came from outside as its JSON text, for an error message that quotes it
 * ("attachment.ips holds something that is not an address: {\"a\":1}"); String() for what JSON
 * cannot write (undefined).
 */
export function jsonText(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}
