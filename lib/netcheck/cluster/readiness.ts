/**
 * Waiting for the probe pods. A pod is ready, skipped (unschedulable, e.g. a
 * cordoned node: its pod stays Pending, which is not a failure), fatal (a
 * container state that will not heal by waiting: reported at once with pod
 * and node), or still starting. The wait ends when the DaemonSet's desired
 * pods all exist and none is starting, at the first fatal pod, or at the
 * deadline.
 */
import type { NetcheckCluster, ProbePod } from "./netcheck_cluster.ts";
import { SetupError } from "./errors.ts";
import { realTimers, sleep, type Timers } from "../../time/timers.ts";

const FATAL_REASONS: ReadonlySet<string> = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "ErrImageNeverPull",
  "ImageInspectError",
  "CreateContainerConfigError",
  "CreateContainerError",
  "InvalidImageName",
  "CrashLoopBackOff",
]);

export type PodState =
  | { kind: "ready" }
  | { kind: "skipped"; reason: string }
  | { kind: "fatal"; reason: string }
  | { kind: "starting" };

/** Classifies one probe pod. */
export function podState(pod: ProbePod): PodState {
  for (const [container, reason] of Object.entries(pod.containerReasons)) {
    if (FATAL_REASONS.has(reason)) return { kind: "fatal", reason: `${container}: ${reason}` };
  }
  if (pod.ready && pod.phase === "Running") return { kind: "ready" };
  if (pod.phase === "Pending" && pod.unschedulable) {
    return { kind: "skipped", reason: "unschedulable (cordoned?)" };
  }
  return { kind: "starting" };
}

export interface ReadyPods {
  ready: ProbePod[];
  skipped: { pod: ProbePod; reason: string }[];
}

export interface WaitOptions {
  namespace: string;
  daemonSet: string;
  selector: string;
  timeoutMs: number;
  /** Pause between polls; a second by default. */
  pollMs?: number;
  signal?: AbortSignal;
  /** The deadline's clock and the pause between polls (fake time in tests). */
  timers?: Timers;
}

/** Polls the probe pods until all are ready or skipped; throws SetupError otherwise. */
export async function waitForProbePods(
  cluster: NetcheckCluster,
  options: WaitOptions,
): Promise<ReadyPods> {
  const timers = options.timers ?? realTimers;
  const deadline = timers.now() + options.timeoutMs;
  for (;;) {
    const desired = await cluster.daemonSetDesired(options.namespace, options.daemonSet);
    if (desired === null) {
      throw new SetupError(`DaemonSet "${options.daemonSet}" disappeared while waiting for it`);
    }
    const pods = await cluster.listPods(options.namespace, options.selector);
    const ready: ProbePod[] = [];
    const skipped: { pod: ProbePod; reason: string }[] = [];
    const starting: ProbePod[] = [];
    for (const pod of pods) {
      const state = podState(pod);
      if (state.kind === "fatal") {
        throw new SetupError(
          `Probe pod "${pod.name}" on node "${pod.nodeName || "(unscheduled)"}" cannot start: ` +
            `${state.reason}; check --image/--bandwidth-image and the node's registry access`,
        );
      }
      if (state.kind === "ready") ready.push(pod);
      else if (state.kind === "skipped") skipped.push({ pod, reason: state.reason });
      else starting.push(pod);
    }
    if (desired > 0 && pods.length >= desired && starting.length === 0) return { ready, skipped };
    if (options.signal?.aborted) throw new SetupError("Interrupted while waiting for probe pods");
    if (timers.now() >= deadline) {
      const waiting = starting.map((p) => `${p.name} on ${p.nodeName || "(unscheduled)"}`);
      const missing = Math.max(0, desired - pods.length);
      throw new SetupError(
        `Probe pods not ready within ${options.timeoutMs / 1000}s: ` +
          (waiting.length ? `still starting: ${waiting.slice(0, 5).join(", ")}` : "") +
          (waiting.length > 5 ? ` and ${waiting.length - 5} more` : "") +
          (missing ? `${waiting.length ? "; " : ""}${missing} not created yet` : "") +
          (desired === 0 ? "no node matches the selector" : "") +
          "; raise --ready-timeout or check the nodes",
      );
    }
    await sleep(timers, options.pollMs ?? 1000, options.signal);
  }
}
