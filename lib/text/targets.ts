/**
 * How `lace targets` and `lace doctor pod` name what a registered target
 * serves and when the kubelet last used it: one wording for both commands.
 */
import { formatDuration } from "../time/duration.ts";

/**
 * "app/readiness", "proxy/preStop": the container and the probe or lifecycle
 * hook the target serves, as in the pod's spec. A key a probe and a hook of
 * one pod share is one target, named by the first in spec order (a
 * container's probes before its hooks); "-" when unknown (read from the
 * pinned map, which knows no pods).
 */
export function servesText(t: { container?: string; probe?: string }): string {
  if (!t.probe) return "-";
  return t.container ? `${t.container}/${t.probe}` : t.probe;
}

/** "12s ago", "1h2m ago"; "never" when the kubelet never connected; "-" when unknown. */
export function lastHitText(ageSeconds: number | null | undefined): string {
  if (ageSeconds === undefined) return "-";
  if (ageSeconds === null) return "never";
  return `${formatDuration(Math.floor(ageSeconds) * 1000)} ago`;
}
