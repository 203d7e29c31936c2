/**
 * `lace doctor probes`: connects to every registered target exactly the way
 * the kubelet would, from a short-lived child cgroup of the kubelet cgroup
 * (programs attached to a cgroup apply to its children), and reports per
 * target whether it was reached. The connecting process is the sim prober
 * (`__prober`), placed in the cgroup by a shell before it execs, so every
 * connect it makes happens inside the cgroup.
 */
import { join } from "node:path";
import { DOCTOR_CGROUP_PREFIX } from "../cgroup/kubelet_finder.ts";
import { lines, randomSuffix } from "../os/process.ts";
import {
  type ProbeOutcome,
  proberCommand,
  type ProbeRequest,
  type ProbeResponse,
} from "../prober/mod.ts";
import { safeTable } from "../text/safe.ts";
import { isHookKind } from "../rules/kinds.ts";

/** One target to probe, with what the report shows about it. */
export interface DoctorTarget {
  pod: string;
  networkId: number;
  network?: string;
  address: string;
  port: number;
  /** For httpGet probes: the path to GET. */
  httpPath?: string;
  httpScheme?: string;
  /** The probe or lifecycle hook the target serves, when known. */
  probe?: string;
}

/** One line of `lace doctor probes --json`. */
export interface ProbeReport {
  pod: string;
  networkId: number;
  address: string;
  port: number;
  result: ProbeOutcome;
  httpStatus: number | null;
  /** SO_MARK the connection carried; 0 when the program did not tag it. */
  mark?: number;
  error?: string;
}

export interface ProbeRunOptions {
  /** The kubelet's cgroup directory; a child is made below it. */
  cgroupDir: string;
  targets: DoctorTarget[];
  timeoutMs: number;
  /** A named network namespace to connect from (tests and the demo); default: this one. */
  netns?: string;
  /** Parallel probers; each handles its share of the targets in order. */
  concurrency?: number;
}

/**
 * A probe request for a target: HTTP GET for an http probe, a bare connect
 * otherwise. A lifecycle hook's target is only connected to: its GET is the
 * pod's own start or stop action (a preStop path may begin a shutdown), which
 * the doctor must never run.
 */
export function requestFor(t: DoctorTarget, timeoutMs: number): ProbeRequest {
  const http = t.httpPath !== undefined && (t.httpScheme ?? "HTTP").toUpperCase() === "HTTP" &&
    !isHookKind(t.probe);
  return http
    ? { host: t.address, port: t.port, timeoutMs, http: t.httpPath }
    : { host: t.address, port: t.port, timeoutMs, connectOnly: true };
}

/** True when every target was reached (and there is at least nothing left unreached). */
export function allReached(reports: ProbeReport[]): boolean {
  return reports.every((r) => r.result === "reached");
}

/** Renders the reports as an aligned table, every cell escaped (text/safe.ts). */
export function probesTable(reports: ProbeReport[]): string {
  const header = ["POD", "NETWORK", "ADDRESS", "PORT", "RESULT", "HTTP"];
  const rows = reports.map((r) => [
    r.pod || "-",
    String(r.networkId),
    r.address,
    String(r.port),
    r.result,
    r.httpStatus === null ? "-" : String(r.httpStatus),
  ]);
  return safeTable(header, rows);
}

/**
 * Probes every target from a fresh child cgroup of `cgroupDir` and removes
 * that cgroup afterwards, also when a prober fails or hangs.
 */
export async function runProbes(o: ProbeRunOptions): Promise<ProbeReport[]> {
  if (o.targets.length === 0) return [];
  const child = join(o.cgroupDir, `${DOCTOR_CGROUP_PREFIX}${Deno.pid}-${randomSuffix()}`);
  try {
    Deno.mkdirSync(child);
  } catch (e) {
    throw new Error(
      `Cannot create a child cgroup "${child}" of the kubelet cgroup to probe from: ${
        (e as Error).message
      }`,
    );
  }
  const procs: Deno.ChildProcess[] = [];
  try {
    const n = Math.max(1, Math.min(o.concurrency ?? 4, o.targets.length));
    const shares: number[][] = Array.from({ length: n }, () => []);
    o.targets.forEach((_, i) => shares[i % n].push(i));
    const reports: ProbeReport[] = new Array(o.targets.length);
    await Promise.all(shares.map(async (indexes) => {
      const proc = spawnProber(child, o.netns);
      procs.push(proc);
      const answers = await askProber(
        proc,
        indexes.map((i) => requestFor(o.targets[i], o.timeoutMs)),
      );
      indexes.forEach((ti, k) => {
        const t = o.targets[ti];
        const a = answers[k];
        reports[ti] = {
          pod: t.pod,
          networkId: t.networkId,
          address: t.address,
          port: t.port,
          result: a.result,
          httpStatus: a.httpStatus ?? null,
          ...(a.mark !== undefined ? { mark: a.mark } : {}),
          ...(a.error ? { error: a.error } : {}),
        };
      });
    }));
    return reports;
  } finally {
    for (const p of procs) {
      try {
        p.kill("SIGKILL");
      } catch {
        // Already exited.
      }
      await p.status;
    }
    await removeCgroup(child);
  }
}

function spawnProber(cgroup: string, netns?: string): Deno.ChildProcess {
  const [command, ...args] = proberCommand(cgroup, netns);
  return new Deno.Command(command, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Sends requests one by one over the prober's JSON-line protocol. */
async function askProber(
  proc: Deno.ChildProcess,
  requests: ProbeRequest[],
): Promise<ProbeResponse[]> {
  const it = lines(proc.stdout);
  const writer = proc.stdin.getWriter();
  const stderr = new Response(proc.stderr).text();
  const first = await it.next();
  if (first.done) {
    await writer.close().catch(() => {});
    throw new Error(`Prober did not start: ${(await stderr).trim() || "no output"}`);
  }
  const answers: ProbeResponse[] = [];
  for (const req of requests) {
    await writer.write(new TextEncoder().encode(JSON.stringify(req) + "\n"));
    const line = await it.next();
    if (line.done) throw new Error(`Prober exited: ${(await stderr).trim() || "no output"}`);
    answers.push(JSON.parse(line.value) as ProbeResponse);
  }
  await writer.close().catch(() => {});
  for await (const _ of it) { /* drain until exit */ }
  await stderr;
  return answers;
}

/** Empties (cgroup.kill) and removes a cgroup, waiting up to 2 s for its processes to go. */
async function removeCgroup(dir: string): Promise<void> {
  const deadline = Date.now() + 2000;
  for (;;) {
    try {
      Deno.removeSync(dir);
      return;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      if (Date.now() > deadline) {
        throw new Error(
          `Cannot remove the probe cgroup "${dir}" (${(e as Error).message}): a prober may ` +
            `still be in it; kill the pids in ${dir}/cgroup.procs, then rmdir it`,
        );
      }
    }
    try {
      Deno.writeTextFileSync(join(dir, "cgroup.kill"), "1");
    } catch {
      // cgroup.kill needs Linux 5.14; the probers were killed above anyway.
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
