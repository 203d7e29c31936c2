/**
 * `lace doctor pod NAMESPACE/NAME`: one pod's probe targets as the agent
 * registered them (container, probe or lifecycle hook, handler, target, mark,
 * the kubelet's hits and last hit, the probe period) beside the result of one
 * probe sent now through the kubelet's own cgroup (a bare connect for a hook:
 * see requestFor). Pure: selection, rows and the table;
 * command.ts gathers the targets and runs the probes.
 */
import type { TargetView } from "../agent_api/views.ts";
import { lastHitText } from "../agent_api/text.ts";
import { isHookKind, TARGET_KINDS } from "../rules/kinds.ts";
import { keyId } from "../probe/key.ts";
import type { ProbeReport } from "./probes.ts";
import { safeJson, safeTable } from "../text/safe.ts";

/** One row of `lace doctor pod`, as --json prints it. */
export interface PodProbeRow {
  container: string | null;
  probe: string | null;
  handler: string | null;
  target: string;
  network: string | null;
  mark: number;
  /** The probe's period when the spec sets one (else the kubelet's 10); null for a hook too. */
  periodSeconds: number | null;
  /** The kubelet's connects the datapath tagged, read before the doctor's own probe. */
  hits: number | null;
  lastHitAgeSeconds: number | null;
  /** The doctor's probe through the kubelet's cgroup now. */
  result: ProbeReport["result"];
  httpStatus: number | null;
  /** The mark the doctor's probe carried (0: untagged). */
  probeMark: number | null;
  error: string | null;
}

/** Checks "NAMESPACE/NAME"; throws a TypeError saying what is expected. */
export function parsePodName(text: string | undefined): string {
  if (!text || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(text)) {
    throw new TypeError(
      `pod needs NAMESPACE/NAME, got ${safeJson(text ?? "")}: name it as in default/web`,
    );
  }
  return text;
}

/** Where a probe or hook comes in a container's spec; anything unknown after them. */
function kindRank(kind: string | undefined): number {
  const i = TARGET_KINDS.indexOf(kind as never);
  return i < 0 ? TARGET_KINDS.length : i;
}

/**
 * The pod's targets, in the order the pod's spec reads (container; liveness,
 * readiness, startup, postStart, preStop; target).
 */
export function podTargets(targets: TargetView[], pod: string): TargetView[] {
  return targets.filter((t) => t.pod === pod).sort((a, b) =>
    (a.container ?? "").localeCompare(b.container ?? "") ||
    kindRank(a.probe) - kindRank(b.probe) || a.family.localeCompare(b.family) ||
    a.address.localeCompare(b.address) || a.port - b.port
  );
}

/** Joins each target with its probe report (same order). */
export function podRows(targets: TargetView[], reports: ProbeReport[]): PodProbeRow[] {
  return targets.map((t, i) => {
    const r = reports[i];
    return {
      container: t.container ?? null,
      probe: t.probe ?? null,
      handler: t.handler ?? null,
      target: keyId({ family: t.family, address: t.address, port: t.port }) +
        (t.httpPath !== undefined ? t.httpPath : ""),
      network: t.network ?? null,
      mark: t.mark,
      periodSeconds: t.periodSeconds ?? null,
      hits: t.hits ?? null,
      lastHitAgeSeconds: t.lastHitAgeSeconds ?? null,
      result: r.result,
      httpStatus: r.httpStatus,
      probeMark: r.mark ?? null,
      error: r.error ?? null,
    };
  });
}

/** The rows as an aligned table, every cell escaped (text/safe.ts): pod authors write most. */
export function podTable(rows: PodProbeRow[]): string {
  const header = [
    "CONTAINER",
    "PROBE/HOOK",
    "HANDLER",
    "TARGET",
    "NETWORK",
    "MARK",
    "PERIOD",
    "HITS",
    "LAST HIT",
    "NOW",
  ];
  const cells = rows.map((r) => [
    r.container ?? "-",
    r.probe ?? "-",
    r.handler ?? "-",
    r.target,
    r.network ?? "-",
    `0x${r.mark.toString(16)}`,
    // A hook runs once, at start or at stop: it has no period.
    isHookKind(r.probe) ? "-" : `${r.periodSeconds ?? 10}s`,
    r.hits === null ? "-" : String(r.hits),
    r.hits === null ? "-" : lastHitText(r.lastHitAgeSeconds),
    r.result + (r.httpStatus !== null ? ` ${r.httpStatus}` : "") +
    (r.probeMark !== null && r.probeMark !== r.mark ? ` (mark 0x${r.probeMark.toString(16)})` : ""),
  ]);
  return safeTable(header, cells);
}
