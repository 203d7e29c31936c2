/**
 * Lace's chained CNI plugin: the `lace` binary run by the container runtime
 * with CNI_COMMAND set, after the pod network plugin in a conflist. On ADD it
 * hands the pod's fresh addresses to the agent, which writes the probe targets
 * before the sandbox's containers start; it passes prevResult through and
 * fails open: the pod's network never depends on Lace's agent. An ADD the
 * agent does not answer removes the pinned probe map's entries at the pod's
 * addresses itself (datapath/address_purge.ts): closed for the old holder's
 * network, open for the pod. This path imports only the small CNI modules
 * (and, on that ADD alone, the map's codec), so the plugin starts fast.
 */
import type { PurgeReport } from "../datapath/address_purge.ts";
import { AgentCallError, type CallAgent, callAgent } from "./client.ts";
import { type Attachment, PROTOCOL_VERSION, type Reply, type Request } from "./protocol.ts";
import { CniError, ERR, errorResult, versionResult } from "./spec.ts";
import { type CniEnv, parseEnv } from "./spec_env.ts";
import { type NetConf, parseNetConf, peekVersion } from "./spec_netconf.ts";
import { passThrough, resultAddresses } from "./spec_result.ts";
import { writeTextSync } from "../os/write_text.ts";

/** What one plugin invocation produced: exit code, stdout, and lines for stderr. */
export interface PluginOutcome {
  code: number;
  stdout: string;
  log: string[];
}

/** Removes the pinned maps' entries at addresses (address_purge.ts; a fake in unit tests). */
export type PurgeAddresses = (pinPath: string, addresses: string[]) => Promise<PurgeReport>;

/**
 * The purge's module, named in a variable and loaded only when the agent does not answer:
 * `deno run` reads the graph of every import it can see before the plugin starts, and an ADD the
 * agent answers should not pay for the map's codec and the libbpf wrappers. scripts/compile.ts
 * includes it.
 */
export const PURGE_MODULE = "../datapath/address_purge.ts";

const purgeAddresses: PurgeAddresses = async (pinPath, addresses) => {
  const m = await import(PURGE_MODULE) as typeof import("../datapath/address_purge.ts");
  return m.purgeAddresses(pinPath, addresses);
};

/**
 * Runs one CNI command over plain inputs and returns what to print. Every
 * failure is a CNI error result (never an exception); agent problems on ADD,
 * DEL, CHECK and GC are logged and do not fail the command.
 */
export async function cniPlugin(
  env: Record<string, string | undefined>,
  stdin: string,
  call: CallAgent = callAgent,
  purge: PurgeAddresses = purgeAddresses,
): Promise<PluginOutcome> {
  const log: string[] = [];
  const version = peekVersion(stdin);
  try {
    const cniEnv = parseEnv(env);
    if (cniEnv.command === "VERSION") return ok(versionResult(version), log);
    const conf = parseNetConf(stdin, cniEnv.command);
    switch (cniEnv.command) {
      case "ADD":
        return ok(await add(cniEnv, conf, call, purge, log), log);
      case "CHECK":
        await check(cniEnv, conf, call, log);
        return ok(undefined, log);
      case "DEL":
        await del(cniEnv, conf, call, log);
        return ok(undefined, log);
      case "GC":
        await gc(stdin, conf, call, log);
        return ok(undefined, log);
      case "STATUS":
        // Lace never makes the node's pod network unavailable: always ready.
        return ok(undefined, log);
    }
  } catch (e) {
    const err = e instanceof CniError
      ? e
      : new CniError(ERR.internal, `Lace's CNI plugin failed: ${(e as Error)?.message ?? e}`);
    log.push(`error ${err.code}: ${err.message}`);
    return { code: 1, stdout: JSON.stringify(errorResult(err, version)) + "\n", log };
  }
}

function ok(result: Record<string, unknown> | undefined, log: string[]): PluginOutcome {
  return { code: 0, stdout: result ? JSON.stringify(result) + "\n" : "", log };
}

let sequence = 0;
function requestId(env: CniEnv): string {
  return `${env.containerId.slice(0, 12) || "gc"}-${Deno.pid}-${++sequence}`;
}

/** The pod a command is about, as CNI_ARGS names it. */
interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

/** The pod named by CNI_ARGS, or why there is none. */
function podOf(env: CniEnv): PodRef | string {
  const namespace = env.args.K8S_POD_NAMESPACE ?? "";
  const name = env.args.K8S_POD_NAME ?? "";
  const uid = env.args.K8S_POD_UID ?? "";
  const missing = [
    ["K8S_POD_NAMESPACE", namespace],
    ["K8S_POD_NAME", name],
    ["K8S_POD_UID", uid],
  ].filter(([, v]) => v === "").map(([k]) => k);
  if (missing.length > 0) return `CNI_ARGS has no ${missing.join(", ")}`;
  return { namespace, name, uid };
}

/** How log lines name a command: by its pod where CNI_ARGS names one, else by its container. */
function describe(command: string, env: CniEnv, pod: PodRef | string): string {
  return `${command} ${typeof pod === "string" ? env.containerId : `${pod.namespace}/${pod.name}`}`;
}

/** The fields of every request about one attachment (container and interface). */
function attachmentRequest(env: CniEnv) {
  return {
    v: PROTOCOL_VERSION,
    id: requestId(env),
    ref: { containerId: env.containerId, ifname: env.ifname },
  };
}

function attachmentOf(pod: PodRef, ips: string[], conf: NetConf): Attachment {
  const a: Attachment = { ...pod, ips };
  if (conf.network !== undefined) {
    a.network = conf.network;
    a.networkId = conf.networkId;
  }
  return a;
}

/** Sends one request; an agent that is down, slow or broken becomes a log line and null. */
async function tryCall(
  call: CallAgent,
  conf: NetConf,
  request: Request,
  log: string[],
  what: string,
): Promise<Reply | null> {
  try {
    return await call(conf.socket, request, conf.timeoutMs);
  } catch (e) {
    const reason = e instanceof AgentCallError ? e.message : `unexpected: ${(e as Error)?.message}`;
    log.push(`${what}: the agent at ${conf.socket} did not answer (${reason})`);
    return null;
  }
}

async function add(
  env: CniEnv,
  conf: NetConf,
  call: CallAgent,
  purge: PurgeAddresses,
  log: string[],
): Promise<Record<string, unknown>> {
  if (!conf.prevResult) {
    throw new CniError(
      ERR.invalidConfig,
      `Network configuration has no "prevResult": Lace's plugin must be chained after the pod network plugin`,
    );
  }
  const result = passThrough(conf.prevResult, conf.cniVersion);
  const ips = resultAddresses(conf.prevResult);
  const pod = podOf(env);
  const what = describe("ADD", env, pod);
  if (typeof pod === "string") {
    log.push(`${what}: ${pod}, so no probe targets are registered now`);
    return result;
  }
  if (ips.length === 0) {
    log.push(`${what}: prevResult holds no address inside the sandbox; nothing to register`);
    return result;
  }
  const request: Request = {
    ...attachmentRequest(env),
    op: "add",
    attachment: attachmentOf(pod, ips, conf),
  };
  const reply = await tryCall(call, conf, request, log, what);
  if (reply && !reply.ok && reply.refused) {
    // Not a failure of the agent but its verdict: this address would let probes cross networks.
    throw new CniError(
      ERR.addressConflict,
      `Lace refused the attachment of pod ${pod.namespace}/${pod.name}: ${reply.error}`,
    );
  }
  if (reply && !reply.ok) log.push(`${what}: the agent refused the targets: ${reply.error}`);
  if (!reply && conf.addressSharing === "shared") {
    // Every network may hold entries at a shared address: removing them would fail the probes of
    // pods that are there by the operator's choice, and close no gap between networks.
    log.push(`${what}: addresses are shared between networks; the probe targets there are kept`);
  } else if (!reply) await purgeStaleTargets(conf, ips, purge, log, what);
  if (!reply || !reply.ok) {
    log.push(`${what}: the pod's network is set up anyway; the pod watch registers its targets`);
  }
  return result;
}

/**
 * With no agent to answer, the map still holds what it wrote last: entries at these addresses
 * may be a deleted pod's, of another network. They go, whatever their port and network; the pod
 * starts either way, and its probes are tagged once the agent is back.
 */
async function purgeStaleTargets(
  conf: NetConf,
  ips: string[],
  purge: PurgeAddresses,
  log: string[],
  what: string,
): Promise<void> {
  const at = ips.join(", ");
  let report: PurgeReport;
  try {
    report = await purge(conf.pinPath, ips);
  } catch (e) {
    report = { maps: [], problems: [`unexpected: ${(e as Error)?.message ?? e}`] };
  }
  for (const { path, removed } of report.maps) {
    log.push(
      removed.length
        ? `${what}: removed the probe targets ${
          removed.join(", ")
        } from ${path}, left by a pod before this one (the agent writes what belongs when it is back)`
        : `${what}: no probe target at ${at} in ${path}`,
    );
  }
  for (const problem of report.problems) {
    log.push(
      `${what}: cannot remove the probe targets at ${at}: ${problem}; until the agent is back, the kubelet's probes there may be tagged into the network of a pod that held these addresses before`,
    );
  }
}

async function del(env: CniEnv, conf: NetConf, call: CallAgent, log: string[]): Promise<void> {
  const pod = podOf(env);
  const request: Request = { ...attachmentRequest(env), op: "del" };
  if (typeof pod !== "string") request.uid = pod.uid;
  const what = describe("DEL", env, pod);
  const reply = await tryCall(call, conf, request, log, what);
  if (reply && !reply.ok) {
    log.push(`${what}: the agent failed to remove the targets: ${reply.error}`);
  }
  if (!reply || !reply.ok) {
    log.push(`${what}: the targets go when the pod leaves the pod watch`);
  }
}

async function check(env: CniEnv, conf: NetConf, call: CallAgent, log: string[]): Promise<void> {
  if (!conf.prevResult) {
    throw new CniError(ERR.invalidConfig, `Network configuration has no "prevResult" for CHECK`);
  }
  const ips = resultAddresses(conf.prevResult);
  const pod = podOf(env);
  const what = describe("CHECK", env, pod);
  if (typeof pod === "string") {
    log.push(`${what}: ${pod}, so there is nothing to check`);
    return;
  }
  const request: Request = {
    ...attachmentRequest(env),
    op: "check",
    attachment: attachmentOf(pod, ips, conf),
  };
  const reply = await tryCall(call, conf, request, log, what);
  if (!reply) return;
  if (!reply.ok) {
    if (reply.retry) {
      throw new CniError(ERR.tryAgainLater, `Lace's agent is not ready to check: ${reply.error}`);
    }
    log.push(`${what}: the agent could not check: ${reply.error}`);
    return;
  }
  const problems = reply.problems ?? [];
  if (problems.length > 0) {
    throw new CniError(
      ERR.targetsMismatch,
      `Probe targets of pod ${pod.namespace}/${pod.name} do not match: ${problems.join("; ")}`,
      problems.join("\n"),
    );
  }
}

async function gc(stdin: string, conf: NetConf, call: CallAgent, log: string[]): Promise<void> {
  const raw = JSON.parse(stdin)["cni.dev/valid-attachments"];
  if (raw !== undefined && !Array.isArray(raw)) {
    throw new CniError(ERR.invalidConfig, `"cni.dev/valid-attachments" must be a list`);
  }
  const valid = [];
  for (const item of raw ?? []) {
    if (typeof item?.containerID !== "string" || typeof item?.ifname !== "string") {
      throw new CniError(
        ERR.invalidConfig,
        `"cni.dev/valid-attachments" holds an entry without containerID and ifname: ${
          JSON.stringify(item)
        }`,
      );
    }
    valid.push({ containerId: item.containerID, ifname: item.ifname });
  }
  const request: Request = { v: PROTOCOL_VERSION, id: `gc-${Deno.pid}`, op: "gc", valid };
  const reply = await tryCall(call, conf, request, log, "GC");
  if (reply && !reply.ok) log.push(`GC: the agent failed: ${reply.error}`);
}

/** All of stdin; read synchronously, since a web stream adds CPU time to the plugin's start. */
function readStdin(): string {
  if (Deno.stdin.isTerminal()) return "";
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(64 * 1024);
  for (let n = Deno.stdin.readSync(buffer); n !== null; n = Deno.stdin.readSync(buffer)) {
    chunks.push(buffer.slice(0, n));
  }
  return new TextDecoder().decode(concat(chunks));
}

function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.length;
  }
  return all;
}

/**
 * The process entry point (main.ts calls it when CNI_COMMAND is set): reads
 * stdin and the environment, runs the command, prints the result on stdout
 * and the log on stderr prefixed "lace-cni:", and returns the exit code.
 */
export async function runCniPlugin(): Promise<number> {
  let stdin: string;
  try {
    stdin = readStdin();
  } catch (e) {
    const err = new CniError(ERR.ioFailure, `Cannot read stdin: ${(e as Error).message}`);
    writeTextSync(Deno.stdout, JSON.stringify(errorResult(err, "")) + "\n");
    return 1;
  }
  const outcome = await cniPlugin(Deno.env.toObject(), stdin);
  for (const line of outcome.log) {
    try {
      writeTextSync(Deno.stderr, `lace-cni: ${line}\n`);
    } catch { /* the runtime closed stderr: nothing to tell */ }
  }
  try {
    writeTextSync(Deno.stdout, outcome.stdout);
  } catch {
    return 1;
  }
  return outcome.code;
}
