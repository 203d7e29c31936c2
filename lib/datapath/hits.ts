/**
 * Per-target hits as operators read them: how many kubelet connects the
 * datapath tagged for a target and how long ago the last one was. Pure; the
 * clock reading is the caller's.
 */
import { keyId, type ProbeEntryWithHits, type ProbeHits, type ProbeKey } from "./probe_map.ts";

/** A target's hits for JSON and tables. */
export interface HitsView {
  /** Kubelet connects the datapath tagged for this target since it was written. */
  hits: number;
  /** Seconds since the last tagged connect (to 0.1 s); null when there was none. */
  lastHitAgeSeconds: number | null;
}

/**
 * The view of one target's hits at `nowNs` (CLOCK_MONOTONIC): a last hit
 * recorded a little after `nowNs` (the coarse clock runs in ticks) is age 0.
 */
export function hitsView(hits: ProbeHits, nowNs: bigint): HitsView {
  if (hits.lastHitNs === 0n) return { hits: Number(hits.hits), lastHitAgeSeconds: null };
  const ageNs = nowNs > hits.lastHitNs ? nowNs - hits.lastHitNs : 0n;
  return { hits: Number(hits.hits), lastHitAgeSeconds: Number(ageNs / 100_000_000n) / 10 };
}

/** Each key's hits at `nowNs`, by keyId(). */
export function hitsByKey(entries: ProbeEntryWithHits[], nowNs: bigint): Map<string, HitsView> {
  return new Map(entries.map((e) => [keyId(e.key), hitsView(e.hits, nowNs)]));
}

/** The hits of `key` in `byKey`, or none when the map does not hold it. */
export function hitsOf(byKey: Map<string, HitsView>, key: ProbeKey): HitsView {
  return byKey.get(keyId(key)) ?? { hits: 0, lastHitAgeSeconds: null };
}
