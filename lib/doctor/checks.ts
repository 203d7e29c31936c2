/**
 * `lace doctor`'s checks: a pure evaluation of a snapshot of the node
 * (gathered by doctor_snapshot.ts) into checks that each say what is wrong
 * and how to fix it. Tested without root by building snapshots by hand.
 */
import { isWithin } from "../cgroup/path.ts";
import type { TargetView } from "../agent/http_server.ts";
import type { ApiServerProcess, ProcessInfo } from "../cgroup/kubelet_finder.ts";
import type { DistrustedKubelet } from "../cgroup/kubelet_trust.ts";
import { ABI_VERSION } from "../datapath/probe_map.ts";
import type { UnmatchedView } from "../agent/unmatched.ts";
import { keyId } from "../datapath/probe_map.ts";

export interface Check {
  name: string;
  ok: boolean;
  message: string;
  /** What to do; empty when ok. */
  fix: string;
  /** "error" checks decide the exit code; "warning" ones only inform. */
  severity: "error" | "warning";
}

export interface LinkSnapshot {
  program: string;
  pinned: boolean;
  alive: boolean;
  cgroupId: bigint;
  progId: number;
}

/** Everything the checks look at; each field holds a value or why it could not be read. */
export interface NodeSnapshot {
  pinPath: string;
  bpffsMounts: string[];
  /** The filesystem type under the pin path (or its nearest existing parent). */
  pinPathFsType: string | null;
  mapPinned: boolean;
  /** The map layouts (ABI versions) pinned under the pin path, newest first. */
  layouts: number[];
  links: LinkSnapshot[] | { error: string };
  info: { abiVersion: number; objectSha256: string } | null | { error: string };
  binarySha256: string | { error: string };
  /** The map layout this lace's object declares; null when the object cannot be read. */
  binaryAbi: number | null;
  cgroup2Mounts: string[];
  kubeletCgroup: {
    configured: string;
    path: string | null;
    error: string | null;
    id: bigint | null;
  };
  /** The kubelet processes that may be trusted as the kubelet (kubelet_trust.ts), best first. */
  kubelets: { pid: number; comm: string; cgroupDir: string }[];
  /** Kubelet-looking processes that may not, with why. */
  otherKubelets: DistrustedKubelet[];
  extraProcesses: ProcessInfo[];
  /** Processes in the kubelet cgroup that serve the Kubernetes API (k3s server, kubelite …). */
  apiServers: ApiServerProcess[];
  agent: {
    addr: string;
    healthz: number | null;
    readyz: { status: number; body: string } | null;
    targets: TargetView[] | null;
    /** Recent kubelet connects into pod ranges that matched no target (the agent's /unmatched). */
    unmatched: UnmatchedView[] | null;
    error: string | null;
  };
  mapEntries: number | { error: string };
  counters: Record<string, bigint> | { error: string };
  /** A cgroup directory by id (to say where a link really is), or null. */
  cgroupPathOf: (id: bigint) => string | null;
}

function isError(v: unknown): v is { error: string } {
  return typeof v === "object" && v !== null && "error" in v;
}

function check(
  name: string,
  ok: boolean,
  message: string,
  fix = "",
  severity: Check["severity"] = "error",
): Check {
  return { name, ok, message, fix: ok ? "" : fix, severity };
}

const START_AGENT = "start the agent (`lace agent`, the lace-agent systemd unit or the Helm " +
  "chart's DaemonSet) with the same --pin-path";

/** Evaluates a snapshot into the doctor's checks, in the order an operator reads them. */
export function evaluate(s: NodeSnapshot): Check[] {
  const checks: Check[] = [];
  const onBpffs = s.pinPathFsType === "bpf";
  checks.push(check(
    "bpffs",
    onBpffs,
    onBpffs
      ? `bpffs is mounted and holds the pin path "${s.pinPath}"`
      : s.bpffsMounts.length === 0
      ? "bpffs is not mounted"
      : `pin path "${s.pinPath}" is not on bpffs (bpffs is at ${s.bpffsMounts.join(", ")})`,
    s.bpffsMounts.length === 0
      ? "mount it: `mount -t bpf bpf /sys/fs/bpf` (in a container, mount the host's /sys/fs/bpf)"
      : "use a --pin-path under a bpffs mount",
  ));
  checks.push(check(
    "pinned-map",
    s.mapPinned,
    s.mapPinned
      ? `probe map pinned under "${s.pinPath}"`
      : `no probe map pinned under "${s.pinPath}"`,
    START_AGENT,
  ));
  if (s.layouts.length > 1) {
    checks.push(check(
      "map-layouts",
      false,
      `maps of ${s.layouts.length} layouts are pinned (ABI ${s.layouts.join(", ")}): a migration ` +
        "is under way, was interrupted, or an agent of another release stands by",
      "the agent finishes the migration at its next start or cgroup check (within a second); " +
        "if this stays, check that one release of the agent runs on this node",
      "warning",
    ));
  }
  checks.push(...linkChecks(s));
  checks.push(versionCheck(s));

  const v2 = s.cgroup2Mounts.length > 0;
  checks.push(check(
    "cgroup2",
    v2,
    v2 ? `cgroup2 is mounted at ${s.cgroup2Mounts.join(", ")}` : "cgroup2 is not mounted",
    "mount it: `mount -t cgroup2 none /sys/fs/cgroup` (in a container, mount the host's " +
      "cgroup2 and set --host-cgroup-root)",
  ));
  const kc = s.kubeletCgroup;
  checks.push(check(
    "kubelet-cgroup",
    kc.id !== null,
    kc.id !== null
      ? `kubelet cgroup "${kc.path}" exists${kc.configured === "auto" ? " (found by auto)" : ""}`
      : kc.error ?? `kubelet cgroup "${kc.path}" does not exist`,
    kc.configured === "auto"
      ? "start the kubelet, or give its cgroup with --kubelet-cgroup"
      : "set --kubelet-cgroup (Helm value node.kubeletCgroupPath) to the kubelet's cgroup, " +
        "or to auto; `systemctl status kubelet` shows it as CGroup",
  ));
  checks.push(kubeletProcessCheck(s));
  if (s.otherKubelets.length > 0) {
    checks.push(check(
      "kubelet-lookalikes",
      false,
      "processes that look like a kubelet but are not trusted as one (the agent never follows " +
        "them): " + s.otherKubelets.map((k) => `${k.pid} (${k.comm}): ${k.reason}`).join("; "),
      "find out who started them: a process named kubelet in a pod or container is someone " +
        "trying to take the probe programs; the real kubelet runs as root in the host's mount " +
        "namespace, outside any container",
      "warning",
    ));
  }
  if (s.extraProcesses.length > 0) {
    checks.push(check(
      "kubelet-cgroup-shared",
      false,
      `kubelet cgroup "${kc.path}" also holds processes that are not the kubelet; their ` +
        "connections to probe targets get tagged too: " +
        s.extraProcesses.map((p) => `${p.pid} (${p.comm})`).join(", "),
      "run the kubelet in a cgroup of its own (its own systemd unit), or accept the wider tagging",
      "warning",
    ));
  }
  if (s.apiServers.length > 0) checks.push(apiServerSharedCheck(s));
  checks.push(...agentChecks(s));
  return checks;
}

function linkChecks(s: NodeSnapshot): Check[] {
  if (isError(s.links)) {
    return [
      check("links", false, `cannot read Lace's pinned links: ${s.links.error}`, START_AGENT),
    ];
  }
  const out: Check[] = [];
  const kubeletId = s.kubeletCgroup.id;
  for (const l of s.links) {
    const name = `link-${l.program}`;
    if (!l.pinned) {
      out.push(check(name, false, `no ${l.program} link pinned under "${s.pinPath}"`, START_AGENT));
    } else if (!l.alive) {
      out.push(check(
        name,
        false,
        `the ${l.program} link is dead: the cgroup it was attached to is gone ` +
          "(the kubelet restarted and its cgroup was recreated)",
        "a running agent re-attaches within a second: check that it runs (agent-health below)",
      ));
    } else if (l.cgroupId !== kubeletId) {
      const where = s.cgroupPathOf(l.cgroupId);
      const at = `the ${l.program} link is attached to cgroup id ${l.cgroupId}${
        where ? ` ("${where}")` : ""
      }`;
      out.push(check(
        name,
        false,
        kubeletId === null
          ? `${at}, and the kubelet cgroup was not found`
          : `${at}, not to the kubelet cgroup "${s.kubeletCgroup.path}" (id ${kubeletId})`,
        kubeletId === null
          ? "fix the kubelet cgroup first (see kubelet-cgroup below)"
          : "restart the agent with the right --kubelet-cgroup; it moves the link",
      ));
    } else {
      out.push(check(
        name,
        true,
        `the ${l.program} link (program id ${l.progId}) is attached to the kubelet cgroup ` +
          `(id ${l.cgroupId})`,
      ));
    }
  }
  return out;
}

/** Which BPF object the node runs (the info map of the maps the links use), and whether it is this lace's. */
function versionCheck(s: NodeSnapshot): Check {
  const fix = "start the agent of this release: it swaps its program into the pinned links in " +
    "place (a map layout change is migrated first)";
  if (isError(s.info)) return check("program-version", false, s.info.error, START_AGENT);
  if (s.info === null) {
    return check("program-version", false, "no program version recorded in the info map", fix);
  }
  const runs = `the node runs BPF object sha256 ${s.info.objectSha256.slice(0, 12)} ` +
    `(map layout ABI ${s.info.abiVersion})`;
  if (isError(s.binarySha256)) {
    return check(
      "program-version",
      false,
      `${runs}; this lace's object: ${s.binarySha256.error}`,
      "rebuild: `deno task bpf`",
    );
  }
  const abi = s.binaryAbi ?? ABI_VERSION;
  const same = s.info.objectSha256 === s.binarySha256 && s.info.abiVersion === abi;
  return check(
    "program-version",
    same,
    same
      ? `${runs}: this lace's object`
      : `${runs}, not this lace's (sha256 ${s.binarySha256.slice(0, 12)}, map layout ABI ${abi})`,
    fix,
  );
}

function kubeletProcessCheck(s: NodeSnapshot): Check {
  const path = s.kubeletCgroup.path;
  if (s.kubelets.length === 0) {
    return check(
      "kubelet-process",
      false,
      "no kubelet process found in /proc (looked for kubelet, k3s server/agent, kubelite, " +
        "running as root in the host's mount namespace outside containers)",
      "start the kubelet; in a container, run with hostPID so /proc shows the host's processes",
    );
  }
  const inside = path ? s.kubelets.find((k) => isWithin(k.cgroupDir, path)) : undefined;
  if (inside) {
    return check(
      "kubelet-process",
      true,
      `kubelet (pid ${inside.pid}, ${inside.comm}) runs in the kubelet cgroup "${inside.cgroupDir}"`,
    );
  }
  const k = s.kubelets[0];
  const where = s.kubelets.slice(0, 3).map((x) =>
    `kubelet (pid ${x.pid}, ${x.comm}) runs in cgroup "${x.cgroupDir}"`
  ).join("; ");
  return check(
    "kubelet-process",
    false,
    `${where}, not in the kubelet cgroup "${path ?? s.kubeletCgroup.configured}": ` +
      "its probes are not tagged",
    `set --kubelet-cgroup ${k.cgroupDir} (Helm value node.kubeletCgroupPath), or auto`,
  );
}

/**
 * The API server in the kubelet's cgroup (k3s servers, MicroK8s): its proxy connections to pods
 * (pods/proxy, services/proxy) are tagged into the target's network too. Not an error, since the
 * distribution decides it, but the operator must know which settings keep tenants from it.
 */
function apiServerSharedCheck(s: NodeSnapshot): Check {
  return check(
    "api-server-in-kubelet-cgroup",
    false,
    `the Kubernetes API server runs in the kubelet cgroup "${s.kubeletCgroup.path}": ` +
      s.apiServers.map((p) => `${p.pid} (${p.comm}: ${p.what})`).join(", ") +
      "; its connections to probe targets (pods/proxy, services/proxy) are tagged into the " +
      "target's network like the kubelet's probes",
    'keep tenants from steering it (docs/deploy.md, "The API server in the kubelet\'s cgroup"): ' +
      "chain the lace CNI plugin, keep the admission policy on, do not let tenants write " +
      "Endpoints or EndpointSlices; or keep tenant pods off this node, or deny tenants " +
      "pods/proxy and services/proxy",
    "warning",
  );
}

function agentChecks(s: NodeSnapshot): Check[] {
  const a = s.agent;
  const out: Check[] = [];
  const healthy = a.healthz === 200;
  out.push(check(
    "agent-health",
    healthy,
    healthy
      ? `agent answers on ${a.addr}`
      : a.error ?? `agent's /healthz on ${a.addr} answered ${a.healthz}`,
    `${START_AGENT}; if it runs, check --agent-socket (LACE_AGENT_SOCKET) matches`,
  ));
  if (healthy) {
    const ready = a.readyz?.status === 200;
    out.push(check(
      "agent-ready",
      ready,
      ready ? "agent is ready" : `agent is not ready: ${a.readyz?.body.trim() || "no answer"}`,
      "see the reasons above and the agent's log (`journalctl -u lace-agent` or kubectl logs)",
    ));
  }
  if (isError(s.mapEntries)) {
    out.push(
      check(
        "probe-targets",
        false,
        `cannot read the probe map: ${s.mapEntries.error}`,
        START_AGENT,
        "warning",
      ),
    );
  } else {
    const agentCount = a.targets?.length;
    const agrees = agentCount === undefined || agentCount === s.mapEntries;
    out.push(check(
      "probe-targets",
      s.mapEntries > 0 && agrees,
      `${s.mapEntries} probe targets in the map` +
        (agentCount === undefined ? "" : `, ${agentCount} known to the agent`),
      s.mapEntries === 0
        ? "no pod on this node has a Lace network with probes: check the pods' network annotations"
        : "the agent repairs drift on its next resync; if it persists, check its log",
      "warning",
    ));
  }
  if (a.targets) out.push(staleTargetsCheck(a.targets));
  if (a.unmatched) out.push(unmatchedCheck(a.unmatched));
  if (!isError(s.counters)) {
    const c = s.counters;
    const seen = (c.connect4Seen ?? 0n) + (c.connect6Seen ?? 0n);
    const tagged = (c.connect4Tagged ?? 0n) + (c.connect6Tagged ?? 0n);
    const failed = c.setsockoptFailed ?? 0n;
    out.push(check(
      "tagged-connects",
      failed === 0n && (seen > 0n || isError(s.mapEntries) || s.mapEntries === 0),
      `${tagged} of ${seen} connects from the kubelet cgroup tagged` +
        (failed > 0n ? `, ${failed} setsockopt failures` : ""),
      failed > 0n
        ? "the kernel refused SO_MARK: check the kernel log and that the program is current"
        : "no connect seen from the kubelet cgroup: the kubelet does not run in it (see above)",
      "warning",
    ));
  }
  return out;
}

/** The kubelet's default probe period (periodSeconds), in seconds. */
export const DEFAULT_PROBE_PERIOD_S = 10;
/** A target not connected to within this many of its probe periods is flagged. */
export const STALE_PERIODS = 3;

/** How one target reads for the on-call: "10.0.0.1:80 (ns/a, readiness)". */
function targetLabel(t: TargetView): string {
  const key = keyId({ family: t.family, address: t.address, port: t.port });
  return t.pod ? `${key} (${t.pod}${t.probe ? `, ${t.probe}` : ""})` : key;
}

/**
 * Targets the kubelet has not connected to within STALE_PERIODS of their
 * probe's period: its probe goes elsewhere (another address or port), or the
 * kubelet stopped probing. Targets never connected to are listed apart (a pod
 * that just started, or a probe that never reaches Lace).
 */
export function staleTargetsCheck(targets: TargetView[]): Check {
  const stale: string[] = [];
  const never: string[] = [];
  for (const t of targets) {
    if (t.hits === undefined) continue; // an agent without hits: nothing to judge
    const limit = STALE_PERIODS * (t.periodSeconds ?? DEFAULT_PROBE_PERIOD_S);
    if (t.lastHitAgeSeconds === null || t.lastHitAgeSeconds === undefined) {
      never.push(targetLabel(t));
    } else if (t.lastHitAgeSeconds > limit) {
      stale.push(
        `${targetLabel(t)} last ${Math.floor(t.lastHitAgeSeconds)} s ago (period ${
          t.periodSeconds ?? DEFAULT_PROBE_PERIOD_S
        } s)`,
      );
    }
  }
  const show = (list: string[]) =>
    list.slice(0, 10).join("; ") + (list.length > 10 ? `; and ${list.length - 10} more` : "");
  const parts = [
    ...(stale.length
      ? [`not connected to within ${STALE_PERIODS} probe periods: ${show(stale)}`]
      : []),
    ...(never.length ? [`never connected to: ${show(never)}`] : []),
  ];
  return check(
    "target-hits",
    parts.length === 0,
    parts.length === 0
      ? `the kubelet connected to each of the ${targets.length} targets within ${STALE_PERIODS} probe periods`
      : `kubelet connects by target: ${parts.join("; ")}`,
    "a pod that just started has no hit yet; otherwise the kubelet probes another address or " +
      "port than the target (see unmatched-connects, `lace doctor pod NAMESPACE/NAME`) or no " +
      "longer probes it",
    "warning",
  );
}

/** Recent kubelet connects into Lace pod ranges that matched no target. */
export function unmatchedCheck(recent: UnmatchedView[]): Check {
  const lines = recent.slice(0, 10).map((u) =>
    `${keyId(u)}${u.pod ? ` (pod ${u.pod})` : ""}, ${u.reports} report${
      u.reports === 1 ? "" : "s"
    }, last ${new Date(u.lastSeen).toISOString()}`
  );
  return check(
    "unmatched-connects",
    recent.length === 0,
    recent.length === 0
      ? "no recent kubelet connect into a Lace pod range missed its target"
      : `recent kubelet connects into Lace pod ranges that matched no target (the probe cannot ` +
        `reach the pod): ${lines.join("; ")}` +
        (recent.length > 10 ? `; and ${recent.length - 10} more` : ""),
    "compare the port with the pod's probes (`lace doctor pod NAMESPACE/NAME`): a port the " +
      "rules skipped (the pod's ProbeIgnored Event) or an address from a stale pod status",
    "warning",
  );
}
