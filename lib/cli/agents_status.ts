/**
 * `lace status`'s judgement, pure: from the agent's DaemonSet, its pods and what each agent's
 * node listener answered (/readyz, the lace_attached series of /metrics), whether every node
 * that should run an agent runs one that is attached to the kubelet's cgroup and ready, and what
 * is wrong where it is not. status_command.ts reads the API and the agents; the chart's
 * `helm test` runs it.
 */
import { safeJson, safeTable } from "../text/safe.ts";

/** The parts of the agent's DaemonSet the judgement reads. */
export interface DaemonSetView {
  namespace: string;
  name: string;
  /** Nodes that should run an agent, as the DaemonSet controller counts them. */
  desired: number;
}

/** The parts of an agent pod the judgement reads. */
export interface AgentPodView {
  name: string;
  /** Its node, once scheduled. */
  node?: string;
  /** The node's IP (the agent runs in the host network and listens there). */
  hostIP?: string;
  phase?: string;
  /** Its Ready condition is True. */
  ready: boolean;
  /** Why its container is not running (ImagePullBackOff, CrashLoopBackOff…), when it says. */
  waiting?: string;
  terminating: boolean;
}

/** What an agent's node listener answered; `error` when it did not. */
export type AgentAnswer =
  | { readyz: { status: number; body: string }; metrics: string }
  | { error: string };

/** One agent pod's verdict. */
export interface AgentVerdict {
  node: string;
  pod: string;
  ready: boolean;
  /** The lace_attached series by program, as the agent exports them (1: attached). */
  attached: Record<string, number>;
  /** What is wrong, one sentence each; empty when the agent is attached and ready. */
  problems: string[];
}

/** The whole answer of `lace status`. */
export interface StatusReport {
  daemonSet: string;
  desired: number;
  ok: boolean;
  agents: AgentVerdict[];
  /** What is wrong beyond single agents (no agent scheduled, nodes without a pod). */
  problems: string[];
}

/** The lace_attached series of a Prometheus text scrape, by their program label. */
export function attachedSeries(metrics: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of metrics.matchAll(/^lace_attached\{([^}]*)\}\s+(\S+)/gm)) {
    const program = /program="([^"]*)"/.exec(m[1])?.[1] ?? "";
    out[program] = Number(m[2]);
  }
  return out;
}

/** The reasons a /readyz answer gives ("not ready: X" lines), or its status when it gives none. */
function readyzProblems(readyz: { status: number; body: string }): string[] {
  if (readyz.status === 200) return [];
  const reasons = readyz.body.split("\n").map((l) => l.trim()).filter(Boolean);
  return reasons.length ? reasons : [`not ready: /readyz answered ${readyz.status}`];
}

/**
 * Judges one agent pod from the API's view and its listener's answer (undefined: not asked, as
 * with --metrics-port 0 or a pod with no node IP yet).
 */
export function judgeAgent(pod: AgentPodView, answer: AgentAnswer | undefined): AgentVerdict {
  const problems: string[] = [];
  let attached: Record<string, number> = {};
  if (!pod.node) problems.push("not scheduled on a node yet");
  if (pod.terminating) problems.push("terminating");
  if (!pod.ready) {
    const why = pod.waiting ? `: ${pod.waiting}` : pod.phase ? ` (pod ${pod.phase})` : "";
    problems.push(`the pod is not Ready${why}`);
  }
  if (answer && "error" in answer) {
    problems.push(answer.error);
  } else if (answer) {
    problems.push(...readyzProblems(answer.readyz));
    attached = attachedSeries(answer.metrics);
    const off = Object.entries(attached).filter(([, v]) => v !== 1);
    if (Object.keys(attached).length === 0) {
      problems.push("not attached: its /metrics has no lace_attached series");
    } else if (off.length) {
      problems.push(
        `not attached: ${off.map(([p, v]) => `lace_attached{program="${p}"} ${v}`).join(", ")}`,
      );
    }
  }
  return {
    node: pod.node ?? "-",
    pod: pod.name,
    ready: pod.ready,
    attached,
    problems: [...new Set(problems)],
  };
}

/** The report over every agent pod of `ds`, each with its listener's answer. */
export function statusReport(
  ds: DaemonSetView,
  agents: { pod: AgentPodView; answer?: AgentAnswer }[],
): StatusReport {
  const verdicts = agents.map(({ pod, answer }) => judgeAgent(pod, answer))
    .sort((a, b) => a.node.localeCompare(b.node) || a.pod.localeCompare(b.pod));
  const problems: string[] = [];
  const where = `DaemonSet ${ds.namespace}/${ds.name}`;
  if (ds.desired === 0) {
    problems.push(
      `${where} schedules no agent on any node: check its nodeSelector, affinity and tolerations`,
    );
  }
  const nodes = new Set(verdicts.filter((v) => v.node !== "-").map((v) => v.node));
  if (nodes.size < ds.desired) {
    problems.push(
      `${ds.desired - nodes.size} of ${ds.desired} nodes run no agent pod of ${where} ` +
        `(kubectl -n ${ds.namespace} describe daemonset ${ds.name})`,
    );
  }
  const ok = problems.length === 0 && verdicts.every((v) => v.problems.length === 0);
  return {
    daemonSet: `${ds.namespace}/${ds.name}`,
    desired: ds.desired,
    ok,
    agents: verdicts,
    problems,
  };
}

/** The report as a table, one agent a line, and a last line that says the verdict. */
export function statusText(report: StatusReport): string {
  const rows = report.agents.map((a) => [
    a.node,
    a.pod,
    a.ready ? "yes" : "no",
    Object.entries(a.attached).filter(([, v]) => v === 1).map(([p]) => p).join(",") || "-",
    a.problems.join("; ") || "-",
  ]);
  const lines = rows.length
    ? [safeTable(["NODE", "POD", "READY", "ATTACHED", "PROBLEMS"], rows)]
    : [];
  lines.push(...report.problems.map((p) => `problem: ${p}`));
  const failing = report.agents.filter((a) => a.problems.length).length;
  lines.push(
    report.ok
      ? `Every node's agent is attached and ready: ${report.agents.length} of ` +
        `${report.desired} (DaemonSet ${report.daemonSet})`
      : `Not every node's agent is attached and ready: ${failing} of ${report.agents.length} ` +
        `agent pods failing; DaemonSet ${report.daemonSet} wants ${report.desired}`,
  );
  return lines.join("\n");
}

/** The report as JSON (`--output json`). */
export function statusJson(report: StatusReport): string {
  return safeJson(report);
}
