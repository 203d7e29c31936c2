/**
 * `lace doctor` and `lace doctor probes`: what an operator runs on a node
 * when probes fail. The first checks the setup and explains each problem
 * with its fix; the second probes every registered target from the
 * kubelet's cgroup. Both exit 0 only when everything needed is right.
 */
import { nodeFlags } from "../flags/agent.ts";
import { outputFlags, type OutputSettings } from "../flags/output.ts";
import {
  type CommandSpec,
  duration,
  helpText,
  parseFlags,
  text,
  UsageError,
} from "../flags/parser.ts";
import { defaultConfig, durationProblem, nodeProblems, type NodeSettings } from "../config.ts";
import { registeredTargets } from "../agent_api/registered_targets.ts";
import { targetsFromAgent } from "../agent_api/client.ts";
import { parsePodName, podRows, podTable, podTargets } from "./pod.ts";
import type { TargetView } from "../agent_api/views.ts";
import type { Check } from "./check.ts";
import { evaluate } from "./checks.ts";
import {
  allReached,
  type DoctorTarget,
  type ProbeReport,
  probesTable,
  runProbes,
} from "./probes.ts";
import { gatherSnapshot, resolveKubeletCgroup } from "./snapshot.ts";
import { readMountInfo } from "../os/mountinfo.ts";
import { safeJson, safeText } from "../text/safe.ts";

interface DoctorOptions extends Omit<NodeSettings, "metricsAddr">, OutputSettings {
  /** How long `doctor probes` waits for each target. */
  timeoutMs: number;
  /** Network namespace the probes connect from; empty means this one. */
  netns: string;
}

/** A probe that takes longer than this has failed for the kubelet too. */
const MAX_PROBE_TIMEOUT_MS = 60_000;

/** The command's flags, for its help and shell completion. */
export const doctorCommand: CommandSpec<DoctorOptions> = {
  name: "doctor",
  summary: "Check this node's Lace setup and explain each problem with its fix.",
  subcommands: [
    {
      name: "probes",
      summary: "Connect to every registered target from the kubelet's cgroup and report " +
        "reached, TIMEOUT, REFUSED or NO_ROUTE per target",
    },
    {
      name: "pod",
      args: "NAMESPACE/NAME",
      summary: "One pod's probes with target, mark, hits and last hit, each probed once now " +
        "from the kubelet's cgroup",
    },
  ],
  usage:
    "lace doctor [probes | pod NAMESPACE/NAME] [-o text|json] [--pin-path DIR] [--kubelet-cgroup PATH|auto] " +
    "[--host-cgroup-root DIR] [--agent-socket PATH] [--timeout DURATION]",
  positionals: true,
  flags: [
    ...outputFlags<DoctorOptions>(),
    nodeFlags.pinPath,
    nodeFlags.kubeletCgroup,
    nodeFlags.hostCgroupRoot,
    nodeFlags.agentSocket,
    nodeFlags.cniConfDir,
    nodeFlags.cniStateDir,
    nodeFlags.cniBinDir,
    nodeFlags.podsDir,
    {
      name: "timeout",
      key: "timeoutMs",
      value: duration,
      env: ["LACE_DOCTOR_TIMEOUT"],
      help: "How long `doctor probes` waits for each target",
    },
    {
      name: "netns",
      key: "netns",
      value: text,
      env: ["LACE_DOCTOR_NETNS"],
      hidden: true,
      help: "Network namespace the probes connect from (tests and the demo)",
    },
  ],
  defaults: () => {
    const c = defaultConfig();
    return {
      pinPath: c.pinPath,
      kubeletCgroup: c.kubeletCgroup,
      hostCgroupRoot: c.hostCgroupRoot,
      agentSocket: c.agentSocket,
      cniConfDir: c.cniConfDir,
      cniStateDir: c.cniStateDir,
      cniBinDir: c.cniBinDir,
      podsDir: c.podsDir,
      output: "text",
      timeoutMs: 2000,
      netns: "",
    };
  },
};

/** Everything wrong with doctor's options, one sentence each. */
function doctorProblems(o: DoctorOptions): string[] {
  const problems = nodeProblems(o);
  const timeout = durationProblem("--timeout", o.timeoutMs, 1, MAX_PROBE_TIMEOUT_MS);
  if (timeout) problems.push(timeout);
  return problems;
}

/** Runs `lace doctor …`; returns the exit code (bad flags throw a UsageError: exit code 2). */
export async function runDoctor(args: string[]): Promise<number> {
  const { options, positionals, help } = parseFlags(doctorCommand, args, Deno.env.toObject());
  if (help) {
    console.log(helpText(doctorCommand));
    return 0;
  }
  const [sub, ...rest] = positionals;
  const extra = sub === "probes" ? rest : sub === "pod" ? rest.slice(1) : positionals;
  if (sub === "pod") {
    try {
      parsePodName(rest[0]);
    } catch (e) {
      throw new UsageError((e as Error).message, { cause: e });
    }
  }
  if (extra.length > 0) {
    throw new UsageError(`unexpected argument "${extra[0]}": see lace doctor --help`);
  }
  const problems = doctorProblems(options);
  if (problems.length > 0) throw new UsageError(problems.join("\n"));
  const { output, timeoutMs, netns, ...opts } = options;
  const json = output === "json";
  if (positionals[0] === "probes") {
    return await doctorProbes({ ...opts, json, timeoutMs, netns: netns || undefined });
  }
  if (positionals[0] === "pod") {
    return await doctorPod(positionals[1], { ...opts, json, timeoutMs, netns: netns || undefined });
  }
  const checks = evaluate(await gatherSnapshot(opts));
  const ok = checks.every((c) => c.ok || c.severity === "warning");
  console.log(json ? safeJson({ ok, checks }, 2) : checksText(checks, ok));
  return ok ? 0 : 1;
}

/**
 * The human form of the checks: one line each, the fix under each problem. Messages name pods,
 * processes and paths others chose: each is escaped (text/safe.ts).
 */
export function checksText(checks: Check[], ok: boolean): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  const out = checks.map((c) => {
    const tag = c.ok ? "ok  " : c.severity === "warning" ? "WARN" : "FAIL";
    const line = `${tag}  ${c.name.padEnd(width)}  ${safeText(c.message)}`;
    return c.fix ? `${line}\n${" ".repeat(width + 8)}fix: ${safeText(c.fix)}` : line;
  });
  const problems = checks.filter((c) => !c.ok && c.severity === "error").length;
  out.push(
    "",
    ok ? "All needed checks passed." : `${problems} problem(s) found: see the fixes above.`,
  );
  return out.join("\n");
}

/**
 * `lace doctor pod NAMESPACE/NAME`: the pod's targets from the running agent
 * (it alone knows pods), each probed once now from the kubelet's cgroup.
 */
async function doctorPod(pod: string, o: ProbeCommandOptions): Promise<number> {
  const kubelet = resolveKubeletCgroup(o.kubeletCgroup, o.hostCgroupRoot, readMountInfo());
  if (kubelet.path === null) {
    console.error(`lace doctor pod: ${safeText(kubelet.error ?? "kubelet cgroup not found")}`);
    return 1;
  }
  let targets;
  try {
    targets = podTargets(await targetsFromAgent(o.agentSocket) ?? [], pod);
  } catch (e) {
    console.error(`lace doctor pod: ${safeText((e as Error).message)}`);
    return 1;
  }
  if (targets.length === 0) {
    console.error(
      `lace doctor pod: the agent on ${o.agentSocket} has no probe target of pod ${pod}: it is ` +
        "not on this node, has no Lace network annotations or no tcpSocket/httpGet/grpc probe " +
        "or httpGet lifecycle hook, " +
        "or its probes were skipped (kubectl describe pod: ProbeIgnored, ProbeTargetConflict " +
        "Events); is the agent running?",
    );
    return 1;
  }
  let reports: ProbeReport[];
  try {
    reports = await runProbes({
      cgroupDir: kubelet.path,
      targets: targets.map(doctorTarget),
      timeoutMs: o.timeoutMs,
      netns: o.netns,
    });
  } catch (e) {
    console.error(`lace doctor pod: ${safeText((e as Error).message)}`);
    return 1;
  }
  const rows = podRows(targets, reports);
  if (o.json) console.log(safeJson({ pod, probes: rows }, 2));
  else {
    console.log(
      `Pod ${pod}: its probes as the kubelet runs them, and one probe each now from ` +
        `the kubelet's cgroup "${safeText(kubelet.path)}"\n`,
    );
    console.log(podTable(rows));
  }
  return allReached(reports) ? 0 : 1;
}

/** What the prober needs of a registered target. */
function doctorTarget(t: TargetView): DoctorTarget {
  return {
    pod: t.pod ?? "",
    networkId: t.networkId,
    network: t.network,
    address: t.address,
    port: t.port,
    httpPath: t.httpPath,
    httpScheme: t.httpScheme,
    probe: t.probe,
  };
}

interface ProbeCommandOptions {
  pinPath: string;
  kubeletCgroup: string;
  hostCgroupRoot: string;
  agentSocket: string;
  json: boolean;
  timeoutMs: number;
  netns?: string;
}

async function doctorProbes(o: ProbeCommandOptions): Promise<number> {
  const kubelet = resolveKubeletCgroup(o.kubeletCgroup, o.hostCgroupRoot, readMountInfo());
  if (kubelet.path === null || kubelet.id === null) {
    console.error(
      `lace doctor probes: ${
        safeText(kubelet.error ?? "kubelet cgroup not found")
      }: run \`lace doctor\` to see why`,
    );
    return 1;
  }
  let targets: DoctorTarget[];
  try {
    targets = (await registeredTargets(o.agentSocket, o.pinPath)).map(doctorTarget);
  } catch (e) {
    console.error(`lace doctor probes: ${safeText((e as Error).message)}`);
    return 1;
  }
  targets.sort((a, b) =>
    a.pod.localeCompare(b.pod) || a.address.localeCompare(b.address) || a.port - b.port
  );
  let reports: ProbeReport[];
  try {
    reports = await runProbes({
      cgroupDir: kubelet.path,
      targets,
      timeoutMs: o.timeoutMs,
      netns: o.netns,
    });
  } catch (e) {
    console.error(`lace doctor probes: ${safeText((e as Error).message)}`);
    return 1;
  }
  if (o.json) {
    console.log(safeJson(
      reports.map((r) => ({
        pod: r.pod,
        networkId: r.networkId,
        address: r.address,
        port: r.port,
        result: r.result,
        httpStatus: r.httpStatus,
      })),
      2,
    ));
  } else if (reports.length === 0) {
    console.log("No probe targets registered: nothing to probe");
  } else {
    const failed = reports.filter((r) => r.result !== "reached").length;
    console.log(probesTable(reports));
    console.log(
      failed === 0
        ? `\nAll ${reports.length} targets reached from the kubelet cgroup "${
          safeText(kubelet.path)
        }".`
        : `\n${failed} of ${reports.length} targets not reached: run \`lace doctor\` for the setup, ` +
          "then check the overlay route for the networks above",
    );
  }
  return allReached(reports) ? 0 : 1;
}
