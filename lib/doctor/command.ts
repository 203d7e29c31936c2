/**
 * `lace doctor` and `lace doctor probes`: what an operator runs on a node
 * when probes fail. The first checks the setup and explains each problem
 * with its fix; the second probes every registered target from the
 * kubelet's cgroup. Both exit 0 only when everything needed is right.
 */
import { nodeFlags } from "../cli/agent_flags.ts";
import { type CommandSpec, helpText, parseFlags, UsageError } from "../cli/flags.ts";
import { registeredTargets } from "../cli/targets_command.ts";
import { type Check, evaluate } from "./checks.ts";
import {
  allReached,
  type DoctorTarget,
  type ProbeReport,
  probesTable,
  runProbes,
} from "./probes.ts";
import { gatherSnapshot, resolveKubeletCgroup } from "./snapshot.ts";
import { readMountInfo } from "../mountinfo.ts";

const spec: CommandSpec = {
  name: "doctor",
  summary: "Check this node's Lace setup and explain each problem with its fix.\n" +
    "`lace doctor probes` connects to every registered target from the kubelet's cgroup\n" +
    "and reports reached, TIMEOUT, REFUSED or NO_ROUTE per target.",
  usage: "lace doctor [probes] [--json] [--pin-path DIR] [--kubelet-cgroup PATH|auto] " +
    "[--host-cgroup-root DIR] [--metrics-addr HOST:PORT] [--timeout DURATION]",
  positionals: true,
  flags: [
    { name: "json", type: "boolean", env: ["LACE_JSON"], help: "Print JSON" },
    ...nodeFlags.filter((f) =>
      ["pin-path", "kubelet-cgroup", "host-cgroup-root", "metrics-addr"].includes(f.name)
    ),
    {
      name: "timeout",
      type: "duration",
      env: ["LACE_DOCTOR_TIMEOUT"],
      default: "2s",
      metavar: "DURATION",
      help: "How long `doctor probes` waits for each target",
    },
    {
      name: "netns",
      type: "string",
      env: ["LACE_DOCTOR_NETNS"],
      default: "",
      hidden: true,
      help: "Network namespace the probes connect from (tests and the demo)",
    },
  ],
};

/** Runs `lace doctor …`; returns the exit code (2 for bad flags, with a one-line error). */
export async function runDoctor(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(spec, args, Deno.env.toObject());
    const extra = parsed.positionals.filter((p, i) => !(i === 0 && p === "probes"));
    if (extra.length > 0) {
      throw new UsageError(`lace doctor: unexpected argument "${extra[0]}" (see --help)`);
    }
    const cgroup = parsed.values["kubelet-cgroup"] as string;
    if (cgroup !== "auto" && !cgroup.startsWith("/")) {
      throw new UsageError(`--kubelet-cgroup must be an absolute path or "auto": "${cgroup}"`);
    }
    if ((parsed.values.timeout as number) <= 0) {
      throw new UsageError(`--timeout must be more than zero: "${args.join(" ")}"`);
    }
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(e.message.startsWith("lace") ? e.message : `lace doctor: ${e.message}`);
    return 2;
  }
  const { values, positionals, help } = parsed;
  if (help) {
    console.log(helpText(spec));
    return 0;
  }
  const opts = {
    pinPath: values["pin-path"] as string,
    kubeletCgroup: values["kubelet-cgroup"] as string,
    hostCgroupRoot: values["host-cgroup-root"] as string,
    metricsAddr: values["metrics-addr"] as string,
  };
  const json = values.json === true;
  if (positionals[0] === "probes") {
    return await doctorProbes({
      ...opts,
      json,
      timeoutMs: values.timeout as number,
      netns: (values.netns as string) || undefined,
    });
  }
  const checks = evaluate(await gatherSnapshot(opts));
  const ok = checks.every((c) => c.ok || c.severity === "warning");
  console.log(json ? JSON.stringify({ ok, checks }, null, 2) : checksText(checks, ok));
  return ok ? 0 : 1;
}

/** The human form of the checks: one line each, the fix under each problem. */
export function checksText(checks: Check[], ok: boolean): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  const out = checks.map((c) => {
    const tag = c.ok ? "ok  " : c.severity === "warning" ? "WARN" : "FAIL";
    const line = `${tag}  ${c.name.padEnd(width)}  ${c.message}`;
    return c.fix ? `${line}\n${" ".repeat(width + 8)}fix: ${c.fix}` : line;
  });
  const problems = checks.filter((c) => !c.ok && c.severity === "error").length;
  out.push(
    "",
    ok ? "All needed checks passed." : `${problems} problem(s) found: see the fixes above.`,
  );
  return out.join("\n");
}

async function doctorProbes(o: {
  pinPath: string;
  kubeletCgroup: string;
  hostCgroupRoot: string;
  metricsAddr: string;
  json: boolean;
  timeoutMs: number;
  netns?: string;
}): Promise<number> {
  const kubelet = resolveKubeletCgroup(o.kubeletCgroup, o.hostCgroupRoot, readMountInfo());
  if (kubelet.path === null || kubelet.id === null) {
    console.error(
      `lace doctor probes: ${
        kubelet.error ?? "kubelet cgroup not found"
      }: run \`lace doctor\` to see why`,
    );
    return 1;
  }
  let targets: DoctorTarget[];
  try {
    targets = (await registeredTargets(o.metricsAddr, o.pinPath)).map((t) => ({
      pod: t.pod ?? "",
      networkId: t.networkId,
      network: t.network,
      address: t.address,
      port: t.port,
      httpPath: t.httpPath,
      httpScheme: t.httpScheme,
    }));
  } catch (e) {
    console.error(`lace doctor probes: ${(e as Error).message}`);
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
    console.error(`lace doctor probes: ${(e as Error).message}`);
    return 1;
  }
  if (o.json) {
    console.log(JSON.stringify(
      reports.map((r) => ({
        pod: r.pod,
        networkId: r.networkId,
        address: r.address,
        port: r.port,
        result: r.result,
        httpStatus: r.httpStatus,
      })),
      null,
      2,
    ));
  } else if (reports.length === 0) {
    console.log("No probe targets registered: nothing to probe");
  } else {
    const failed = reports.filter((r) => r.result !== "reached").length;
    console.log(probesTable(reports));
    console.log(
      failed === 0
        ? `\nAll ${reports.length} targets reached from the kubelet cgroup "${kubelet.path}".`
        : `\n${failed} of ${reports.length} targets not reached: run \`lace doctor\` for the setup, ` +
          "then check the overlay route for the networks above",
    );
  }
  return allReached(reports) ? 0 : 1;
}
