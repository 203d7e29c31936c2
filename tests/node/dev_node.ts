/**
 * `scripts/dev node up|down|status|exec`: a real Lace node left running for anyone to try, the
 * same node the real-node tests start (tests/node/node.ts, the same fixture code): the control
 * plane, containerd, the kubelet, the chart's DaemonSet from this checkout, the test network
 * plugin with one isolated network per namespace (a `lace-test.io/network` label picks another;
 * every network reuses the same address ranges; `--ipv6-only` gives pods IPv6 addresses only),
 * the locally built images and those upstream's e2e tests run under their upstream names.
 * `up --nodes 2` joins a second node (tests/node/second_node.ts) with Lace's agent too and each
 * network linked between the two on its own link (the first DEV_LINKED_NETWORKS network ids).
 *
 * It lives in tests/node/ because it is the fixture's front end: the product (lib/, main.ts)
 * never imports tests/ (tests/layout_test.ts), and the fixture is not product code.
 *
 * `up` starts a supervisor (`serve`, in its own session) that owns the node and tears it down on
 * SIGTERM; `up` waits until the agent is Ready and prints how to use the node. `down` stops the
 * supervisor; when it is gone (killed, machine's OOM killer), `down` removes what it left by the
 * owner records of lib/demo/leftovers.ts and the record in STATE_DIR.
 */
import { join } from "node:path";
import { ownerIsGone, OWNERS_DIR, sweepAbandoned } from "../../lib/demo/leftovers.ts";
import { removeAbandonedControlPlaneDirs } from "../kube/fixture.ts";
import { isExecutable } from "../helpers/executable.ts";
import { kubeToolPath, nodeUnavailableReason } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { CGROUP_V1, CGROUP_V2, killCgroups, removeCgroupTree, V1_CONTROLLERS } from "./cgroups.ts";
import { installLace, installLaceOnNodes } from "./chart.ts";
import { NETWORKS } from "./network.ts";
import { startNode } from "./node.ts";
import { joinSecondNode } from "./second_node.ts";

/** Where the dev node's record, its supervisor's log and a stable copy of the kubeconfig live. */
export const STATE_DIR = "/run/lace-dev-node";
export const STATE = join(STATE_DIR, "state.json");
const LOG = join(STATE_DIR, "supervisor.log");
export const KUBECONFIG = join(STATE_DIR, "kubeconfig");

/** What the supervisor records: enough for `down` to undo the node without it. */
export interface DevNodeState {
  /** The supervisor's pid. */
  pid: number;
  /** What `up` asked for: a second `up` asking for another shape is refused. */
  nodes?: number;
  ipv6Only?: boolean;
  /** The node's name (`lace-knode-<suffix>`), its run directory and its pid 1. */
  name?: string;
  dir?: string;
  initPid?: number;
  /** The second node of `up --nodes 2`. */
  second?: { name: string; dir: string; initPid: number };
  /** Set once the agent is Ready (on every node). */
  ready?: boolean;
  /** Why the start failed, if it did. */
  error?: string;
}

async function readState(): Promise<DevNodeState | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(STATE)) as DevNodeState;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`Cannot read ${STATE}; remove it if the node is gone`, { cause: error });
  }
}

async function writeState(state: DevNodeState): Promise<void> {
  await Deno.writeTextFile(`${STATE}.next`, JSON.stringify(state, null, 2), { mode: 0o600 });
  await Deno.rename(`${STATE}.next`, STATE);
}

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/**
 * Network ids (from 1) linked between the two nodes of `up --nodes 2`: the fixed networks and
 * the first namespaces' networks; a namespace's network beyond these reaches its own node only.
 */
export const DEV_LINKED_NETWORKS = 32;

/** The supervisor: starts the node(s) and the chart, records them, holds them until SIGTERM. */
async function serve(ipv6Only: boolean, nodes: number): Promise<void> {
  const state: DevNodeState = { pid: Deno.pid, nodes, ipv6Only };
  await writeState(state);
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    Deno.addSignalListener(signal, () => stop());
  }
  let node, second;
  try {
    node = await startNode({
      networkPerNamespace: true,
      upstreamImages: true,
      ipv6Only,
      kubeletApi: true,
      // As on a node Lace was never installed on: the chart's agent chains its plugin itself.
      chainLace: false,
    });
    Object.assign(state, { name: node.name, dir: node.dir, initPid: node.initPid });
    await writeState(state);
    console.log(`node ${node.name} up: ${JSON.stringify(node.timings)}`);
    if (nodes === 2) {
      second = await joinSecondNode(node, {
        network: NETWORKS[0],
        namespaces: [],
        networkPerNamespace: true,
        linkedNetworks: DEV_LINKED_NETWORKS,
        chainLace: false,
      });
      state.second = { name: second.name, dir: second.dir, initPid: second.initPid };
      await writeState(state);
      console.log(`node ${second.name} up: ${JSON.stringify(second.timings)}`);
      await installLaceOnNodes(node, [second]);
    } else {
      await installLace(node);
    }
    await Deno.copyFile(node.controlPlane.kubeconfigPath, KUBECONFIG);
    state.ready = true;
    await writeState(state);
    console.log("agent Ready");
    await stopped;
  } catch (error) {
    state.error = error instanceof Error ? error.message : String(error);
    await writeState(state);
    console.error(error);
    if (node) console.error(await node.logs(40));
    if (second) console.error(await second.logs(40));
  } finally {
    await second?.close();
    await node?.close();
    await Deno.remove(KUBECONFIG).catch(() => {});
    await Deno.remove(STATE).catch(() => {});
    console.log("node down");
  }
}

function usage(kubectl: string, kubectlBuilt: boolean, second?: string): string {
  const k = `KUBECONFIG=${KUBECONFIG} ${kubectl}`;
  return [
    `The Lace node is up. kubeconfig: ${KUBECONFIG}`,
    kubectlBuilt ? "" : `(${kubectl} is not built: scripts/build_k8s_tools.sh kubectl)`,
    `  export KUBECONFIG=${KUBECONFIG}`,
    `  alias kubectl=${kubectl}`,
    `  ${k} get nodes,pods -A`,
    "Each namespace is its own network; the label lace-test.io/network=<namespace> joins another.",
    "Inside the node (its network, mount and PID namespaces):",
    "  scripts/dev node exec lace targets",
    "  scripts/dev node exec lace doctor pod <namespace>/<pod>",
    ...(second
      ? [
        `The second node ${second}: the same with --node 2`,
        "  scripts/dev node exec --node 2 lace targets",
      ]
      : []),
    "Tear it down: scripts/dev node down",
  ].filter((line) => line !== "").join("\n");
}

async function up(ipv6Only: boolean, nodes: number): Promise<number> {
  if (nodes === 2 && ipv6Only) {
    console.error("--ipv6-only is one node only: the links between two nodes route IPv4");
    return 2;
  }
  const unavailable = await nodeUnavailableReason();
  if (unavailable) {
    console.error(`Cannot start a node here: ${unavailable}`);
    return 1;
  }
  const existing = await readState();
  if (existing && alive(existing.pid)) return alreadyUp(existing, ipv6Only, nodes);
  if (existing) await down();
  await Deno.mkdir(STATE_DIR, { recursive: true, mode: 0o700 });
  const self = new URL(import.meta.url).pathname;
  // Its own session, so that the terminal's ^C after `up` returns does not reach it; its output
  // goes to LOG.
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      `exec setsid "$0" run --allow-all --no-prompt "$1" serve $3 --nodes=$4 >"$2" 2>&1 </dev/null`,
      Deno.execPath(),
      self,
      LOG,
      ipv6Only ? "--ipv6-only" : "",
      String(nodes),
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  child.unref();
  let exited: Deno.CommandStatus | undefined;
  child.status.then((status) => (exited = status));
  console.error(`Starting the node (about a minute; log: ${LOG})`);
  try {
    await waitFor(async () => {
      const state = await readState().catch(() => undefined);
      if (state?.error) throw new Error(state.error);
      if (state ? !alive(state.pid) : exited && !exited.success) {
        throw new Error(`the supervisor exited (${exited ? `code ${exited.code}` : "killed"})`);
      }
      return state?.ready === true;
    }, { timeout: 600_000, interval: 500, message: "the node and its agent to be Ready" });
  } catch (error) {
    console.error(`The node did not come up: ${error instanceof Error ? error.message : error}`);
    console.error(`See ${LOG}; tearing down what was made`);
    await down();
    return 1;
  }
  const kubectl = await kubeToolPath("kubectl");
  console.log(usage(kubectl, isExecutable(kubectl), (await readState())?.second?.name));
  return 0;
}

/**
 * A second `up` while a dev node runs starts nothing: the same shape is already what was asked
 * for (its usage again, exit 0 once Ready); another shape (node count, --ipv6-only) is refused
 * with exit 1, since one dev node at a time fits this machine and the names it uses.
 */
async function alreadyUp(existing: DevNodeState, ipv6Only: boolean, nodes: number) {
  const shape = (n: number, v6: boolean) =>
    `${n} node${n === 2 ? "s" : ""}${v6 ? ", IPv6 only" : ""}`;
  const running = shape(existing.nodes ?? 1, existing.ipv6Only ?? false);
  if ((existing.nodes ?? 1) !== nodes || (existing.ipv6Only ?? false) !== ipv6Only) {
    console.error(
      `Refused: a dev node is already up (${running}, supervisor pid ${existing.pid}), not ` +
        `the ${shape(nodes, ipv6Only)} asked for; scripts/dev node down first`,
    );
    return 1;
  }
  if (!existing.ready) {
    console.error(`A dev node is already starting (supervisor pid ${existing.pid}); see ${LOG}`);
    return 1;
  }
  console.error(
    `A dev node is already up (${running}, supervisor pid ${existing.pid}); nothing started`,
  );
  console.log(usage(await kubeToolPath("kubectl"), true, existing.second?.name));
  return 0;
}

/**
 * Kills and removes the cgroups `lace-knode-*` of owners that are gone, and removes their nodes'
 * run directories (`lace-knode-<suffix>-*` in the temporary directory), also when the state that
 * names them is gone.
 */
async function sweepNodeLeftovers(): Promise<void> {
  const suffixes = new Set<string>();
  const owners: string[] = [];
  try {
    for await (const owner of Deno.readDir(OWNERS_DIR)) owners.push(owner.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  for (const owner of owners) {
    if (!ownerIsGone(owner)) continue;
    const text = await Deno.readTextFile(join(OWNERS_DIR, owner));
    for (const sfx of text.split("\n")) if (sfx) suffixes.add(sfx);
  }
  for (const sfx of suffixes) {
    const name = `lace-knode-${sfx}`;
    const dirs = [...V1_CONTROLLERS.map((c) => join(CGROUP_V1, c, name)), join(CGROUP_V2, name)];
    await killCgroups(dirs);
    for (const dir of dirs) await removeCgroupTree(dir);
    const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
    for await (const entry of Deno.readDir(tmp)) {
      if (entry.isDirectory && entry.name.startsWith(`${name}-`)) {
        await Deno.remove(join(tmp, entry.name), { recursive: true });
      }
    }
  }
}

async function down(): Promise<number> {
  const state = await readState();
  if (state && alive(state.pid)) {
    Deno.kill(state.pid, "SIGTERM");
    const stopped = await waitFor(() => !alive(state.pid), {
      timeout: 120_000,
      interval: 250,
      message: `the supervisor (pid ${state.pid}) to tear the node down`,
    }).then(() => true, () => false);
    if (!stopped) {
      // Hung in its teardown: killed, it leaves what a crash leaves, which the sweep removes.
      console.error(`The supervisor (pid ${state.pid}) did not stop within 120 s; killing it`);
      Deno.kill(state.pid, "SIGKILL");
      const gone = () => Deno.stat(`/proc/${state.pid}`).then(() => false, () => true);
      await waitFor(gone, {
        timeout: 10_000,
        interval: 100,
        message: `the supervisor (pid ${state.pid}) to exit after SIGKILL`,
      }).catch(() => {});
    }
  }
  // A supervisor killed outright took the node's processes with it (pdeathsig, the node's pid 1);
  // its namespace, cgroups and run directory remain.
  await sweepNodeLeftovers();
  // Its control plane's directory (etcd's data, over 100 MB) is the fixture's, by owner pid.
  await removeAbandonedControlPlaneDirs();
  for (const what of await sweepAbandoned()) console.error(`removed ${what}`);
  for (const dir of [state?.second?.dir, state?.dir]) {
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  await Deno.remove(KUBECONFIG).catch(() => {});
  await Deno.remove(STATE).catch(() => {});
  console.error(state ? "The dev node is down" : "No dev node was up; swept leftovers");
  return 0;
}

async function status(): Promise<number> {
  const state = await readState();
  if (!state || !alive(state.pid)) {
    console.log("down");
    return 1;
  }
  const names = [state.name, state.second?.name].filter((n) => n).join(" and ");
  console.log(state.ready ? `up: ${names}, kubeconfig ${KUBECONFIG}` : "starting");
  return state.ready ? 0 : 1;
}

/**
 * Runs a command in node `which`'s (1 or 2) network, mount and PID namespaces; `lace` is the
 * chart's.
 */
async function exec(which: number, cmd: string[]): Promise<number> {
  const state = await readState();
  if (!state?.ready || !state.initPid || !alive(state.pid)) {
    console.error("No dev node is up: scripts/dev node up");
    return 1;
  }
  const initPid = which === 2 ? state.second?.initPid : state.initPid;
  if (!initPid) {
    console.error("The dev node has no second node: scripts/dev node up --nodes 2");
    return 1;
  }
  if (cmd.length === 0) cmd = ["sh"];
  const { code } = await new Deno.Command("nsenter", {
    args: [
      `--target=${initPid}`,
      "--mount",
      "--net",
      "--pid",
      "--",
      "env",
      "PATH=/opt/cni/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      ...cmd,
    ],
  }).spawn().status;
  return code;
}

const USAGE = "usage: scripts/dev node up [--nodes 1|2] [--ipv6-only] | down | status | " +
  "exec [--node 1|2] [--] COMMAND...";

/** 1 or 2 from a command line's argument; anything else ends the command with the usage. */
function nodeNumber(text: string | undefined): number {
  if (text === "1" || text === "2") return Number(text);
  console.error(`Not a node count or number (1 or 2): "${text}"\n${USAGE}`);
  Deno.exit(2);
}

/** `--nodes N` or `--nodes=N` of `args`, 1 without. */
function nodeCount(args: string[]): number {
  const i = args.findIndex((a) => a === "--nodes" || a.startsWith("--nodes="));
  if (i < 0) return 1;
  return nodeNumber(args[i] === "--nodes" ? args[i + 1] : args[i].slice("--nodes=".length));
}

if (import.meta.main) {
  const [command, ...rest] = Deno.args;
  switch (command) {
    case "up":
      Deno.exit(await up(rest.includes("--ipv6-only"), nodeCount(rest)));
      break;
    case "down":
      Deno.exit(await down());
      break;
    case "status":
      Deno.exit(await status());
      break;
    case "exec": {
      const which = rest[0] === "--node" ? nodeNumber(rest[1]) : 1;
      const cmd = rest[0] === "--node" ? rest.slice(2) : rest;
      Deno.exit(await exec(which, cmd[0] === "--" ? cmd.slice(1) : cmd));
      break;
    }
    case "serve":
      await serve(rest.includes("--ipv6-only"), nodeCount(rest));
      break;
    default:
      console.error(USAGE);
      Deno.exit(2);
  }
}
