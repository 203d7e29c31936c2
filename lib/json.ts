/**
 * Checks for JSON that came from outside (a pod manifest, a CNI request, a
 * network configuration): what a value is before it is trusted as one.
 */

/** True for a plain JSON object: not null, not an array. */
export function isObject<V = unknown>(value: unknown): value is Record<string, V> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
