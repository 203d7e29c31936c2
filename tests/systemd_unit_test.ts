/**
 * deploy/systemd/lace-agent.service and lace-agent.env under a real systemd as PID 1: a machine
 * booted by systemd-nspawn (tests/helpers/nspawn.ts) runs a stand-in kubelet as kubelet.service
 * (tests/helpers/kubelet_loop.ts: a connect to pod a's probe port every 50 ms from its cgroup,
 * each with the mark it carried) and the agent as the unit ships, enabled as docs/deploy.md
 * says, on the env file as it ships but for what a machine without a cluster needs (the node's
 * name, the pods directory instead of the API). The agent runs from source: the compiled binary
 * needs denort, which cannot be had here.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { mountOf, parseMountInfo } from "../lib/os/mountinfo.ts";
import { getFromAgent } from "../lib/agent_api/client.ts";
import { type KubeletConnect, parseConnects } from "./helpers/kubelet_loop.ts";
import { NspawnMachine, nspawnUnavailableReason } from "./helpers/nspawn.ts";
import { LACE_IMAGE_HOME, laceLauncher } from "./node/images.ts";
import { POD_A, POD_IPV4 } from "./helpers/agent_process.ts";
import { skipIf, skipName } from "./helpers/skip.ts";
import { explainFailure, waitFor } from "./helpers/wait.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const unavailable = nspawnUnavailableReason();

/** Pod a's readiness probe (tcpSocket), and the mark its network (id 1) gives a probe there. */
const PROBE_PORT = 9000;
const MARK = 0x1000 | 1 << 16;

/** CAP_NET_ADMIN (12), CAP_SYS_ADMIN (21), CAP_PERFMON (38), CAP_BPF (39): the unit's four. */
const UNIT_CAPABILITIES = (1n << 12n) | (1n << 21n) | (1n << 38n) | (1n << 39n);

/** The network plugin's file, as a bridge network would write it. */
const BRIDGE_CONFLIST = JSON.stringify(
  {
    cniVersion: "1.0.0",
    name: "net1",
    plugins: [{
      type: "bridge",
      bridge: "cni0",
      ipam: { type: "host-local", subnet: "10.244.1.0/24" },
    }],
  },
  null,
  2,
) + "\n";

const KUBELET_UNIT = `[Unit]
Description=Stand-in kubelet: probes pod a from this unit's cgroup

[Service]
Environment=DENO_DIR=/opt/lace/deno-dir DENO_NO_UPDATE_CHECK=1
ExecStart=/opt/lace/kubelet run --allow-all --cached-only --no-prompt --quiet \\
  /opt/lace/src/tests/helpers/kubelet_loop.ts ${POD_IPV4} ${PROBE_PORT} /run/kubelet/connects.jsonl
RuntimeDirectory=kubelet
`;

/** The shipped env file, then what a machine without a cluster needs (a later line wins). */
async function envFile(): Promise<string> {
  const shipped = await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.env"));
  const nodeName = (POD_A.spec as { nodeName: string }).nodeName;
  return shipped + [
    "# The test's machine: no cluster, pod a from a directory.",
    `NODE_NAME=${nodeName}`,
    "LACE_KUBE_API=false",
    "LACE_PODS_DIR=/etc/lace/pods",
    "",
  ].join("\n");
}

/** The agent's host pid: the process of the unit's cgroup whose pid in the machine is MainPID. */
function hostPidOf(machine: NspawnMachine, unit: string, mainPid: number): number {
  const procs = Deno.readTextFileSync(join(machine.cgroup, "system.slice", unit, "cgroup.procs"));
  for (const pid of procs.trim().split("\n").filter(Boolean).map(Number)) {
    const nspid = /^NSpid:\s+(.*)$/m.exec(Deno.readTextFileSync(`/proc/${pid}/status`))?.[1];
    if (Number(nspid?.trim().split(/\s+/).at(-1)) === mainPid) return pid;
  }
  throw new Error(`No process of ${unit} is pid ${mainPid} in the machine: ${procs}`);
}

/** A /proc/PID/status field as a number (hex for the capability sets). */
function statusField(pid: number, field: string): bigint {
  const m = new RegExp(`^${field}:\\s+(\\S+)`, "m").exec(
    Deno.readTextFileSync(`/proc/${pid}/status`),
  );
  if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
  return field.startsWith("Cap") ? BigInt(`0x${m[1]}`) : BigInt(m[1]);
}

Deno.test({
  name: skipName("the systemd unit under a real systemd", unavailable),
  ignore: skipIf(unavailable),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const unit = await Deno.readTextFile(join(REPO, "deploy/systemd/lace-agent.service"));
    await using machine = await NspawnMachine.boot({
      "/etc/systemd/system/lace-agent.service": unit,
      "/etc/systemd/system/kubelet.service": KUBELET_UNIT,
      "/etc/lace/lace-agent.env": { text: await envFile(), mode: 0o600 },
      "/etc/lace/pods/a.json": JSON.stringify(POD_A),
      // The plugin, as the unit's header installs it: the agent chains nothing without it.
      "/opt/cni/bin/lace": { text: laceLauncher(LACE_IMAGE_HOME), mode: 0o755 },
    });
    const connectsFile = machine.path("/run/kubelet/connects.jsonl");
    const connects = (): KubeletConnect[] => {
      try {
        return parseConnects(Deno.readTextFileSync(connectsFile));
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) return [];
        throw e;
      }
    };
    const agentState = async () => {
      const p = await machine.unitProperties("lace-agent.service", "ActiveState", "MainPID");
      return { active: p.ActiveState, mainPid: Number(p.MainPID) };
    };
    const ready = async () => {
      const socket = machine.path("/run/lace/agent.sock");
      return (await getFromAgent(socket, "/readyz", 1000)).status === 200;
    };
    const explain = async () =>
      `lace-agent.service:\n${await machine.journal("lace-agent.service")}\n` +
      `kubelet.service:\n${await machine.journal("kubelet.service")}`;
    const conflist = join(machine.root, "etc/cni/net.d/10-bridge.conflist");

    // Before the agent: the kubelet's connects carry no mark, so a tagged one is the agent's.
    await machine.systemctl("start", "kubelet.service");
    await explainFailure(
      waitFor(() => connects().length >= 5, { timeout: 30_000, message: "kubelet connects" }),
      explain,
    );
    assert.deepEqual(new Set(connects().map((c) => c.mark)), new Set([0]));
    assert.equal(
      await Deno.stat(join(machine.root, "etc/cni")).catch(() => "absent"),
      "absent",
      "the machine starts without /etc/cni, as a node where the agent comes first",
    );

    await machine.systemctl("enable", "--now", "lace-agent.service");
    await explainFailure(
      waitFor(ready, { timeout: 60_000, interval: 100, message: "the agent ready" }),
      explain,
    );
    const first = await agentState();

    await t.step(
      "starts under its hardening: the four capabilities, no new privileges, a system-call filter, and a read-only file system but its pins, CNI configuration and state, and sockets",
      async () => {
        assert.equal(first.active, "active");
        const pid = hostPidOf(machine, "lace-agent.service", first.mainPid);
        for (const set of ["CapBnd", "CapPrm", "CapEff", "CapAmb"]) {
          assert.equal(statusField(pid, set), UNIT_CAPABILITIES, `${set} of the agent`);
        }
        assert.equal(statusField(pid, "NoNewPrivs"), 1n);
        assert.equal(statusField(pid, "Seccomp"), 2n, "a seccomp filter (SystemCallFilter=)");
        const mounts = parseMountInfo(await Deno.readTextFile(`/proc/${pid}/mountinfo`));
        const writable = (path: string) => mountOf(mounts, path)?.options.includes("rw");
        for (
          const path of ["/sys/fs/bpf/lace", "/etc/cni/net.d", "/var/lib/lace/cni", "/run/lace"]
        ) {
          assert.equal(writable(path), true, `${path} is writable`);
        }
        for (
          const path of [
            "/",
            "/etc",
            "/etc/lace",
            "/usr/local/bin",
            "/var/lib",
            "/opt/lace/src",
            "/sys/fs/bpf",
            "/sys/fs/bpf/other",
            "/sys/fs/cgroup",
            "/proc/sys",
            "/root",
          ]
        ) {
          assert.equal(
            writable(path),
            false,
            `${path} is read-only (${JSON.stringify(mountOf(mounts, path))})`,
          );
        }
        const mode = async (p: string) => (await Deno.stat(join(machine.root, p))).mode! & 0o7777;
        // Made by the unit: the agent writes only into directories that are root's alone.
        assert.equal(await mode("etc/cni/net.d"), 0o755);
        assert.equal(await mode("var/lib/lace"), 0o700);
        assert.equal((await Deno.stat(join(machine.bpffs, "lace"))).mode! & 0o7777, 0o700);
      },
    );

    await t.step(
      "attaches to the kubelet's cgroup: the kubelet's connects to pod a's probe port carry its network's mark",
      async () => {
        const from = connects().length;
        const tagged = await explainFailure(
          waitFor(() => connects().slice(from).find((c) => c.mark === MARK), {
            timeout: 20_000,
            message: `a connect marked 0x${MARK.toString(16)}`,
          }),
          explain,
        );
        assert.equal(tagged.mark, MARK);
        // The links are pinned where the unit lets the agent write, in the machine's bpffs.
        const pins = [...Deno.readDirSync(join(machine.bpffs, "lace"))].map((e) => e.name);
        assert.ok(pins.includes("link_connect4") && pins.includes("link_connect6"), pins.join(" "));
      },
    );

    let chained = "";
    await t.step(
      "chains the CNI configuration the network plugin writes after the agent started",
      async () => {
        await Deno.writeTextFile(conflist, BRIDGE_CONFLIST, { mode: 0o644 });
        chained = await explainFailure(
          waitFor(() => {
            const text = Deno.readTextFileSync(conflist);
            return JSON.parse(text).plugins.at(-1)?.type === "lace" && text;
          }, { timeout: 20_000, message: "lace chained into 10-bridge.conflist" }),
          explain,
        );
        const plugins = JSON.parse(chained).plugins as { type: string; socket?: string }[];
        assert.deepEqual(plugins.map((p) => p.type), ["bridge", "lace"]);
        assert.equal(plugins[1].socket, "/run/lace/cni.sock");
        // Its original is kept for a byte-exact restore, in a directory root's alone (the pass
        // saves its records after the files it wrote).
        const stateDir = join(machine.root, "var/lib/lace/cni");
        await waitFor(
          () =>
            Deno.readTextFileSync(join(stateDir, "chained.json")).includes("10-bridge.conflist"),
          { message: "the record of 10-bridge.conflist in chained.json" },
        );
        assert.equal((await Deno.stat(stateDir)).mode! & 0o7777, 0o700);
      },
    );

    await t.step(
      "survives systemctl restart: a new process, ready again, no kubelet connect untagged meanwhile, the chain as it was",
      async () => {
        const before = connects().length;
        await machine.systemctl("restart", "lace-agent.service");
        const second = await agentState();
        assert.equal(second.active, "active");
        assert.notEqual(second.mainPid, first.mainPid);
        await explainFailure(
          waitFor(ready, { timeout: 60_000, interval: 100, message: "the agent ready again" }),
          explain,
        );
        await waitFor(() => connects().length >= before + 20, {
          timeout: 20_000,
          message: "20 more kubelet connects",
        });
        const untagged = connects().slice(before).filter((c) => c.mark !== MARK);
        assert.deepEqual(untagged, [], "connects the restart left untagged");
        assert.equal(await Deno.readTextFile(conflist), chained);
        const restarts = await machine.unitProperties("lace-agent.service", "NRestarts");
        assert.equal(
          restarts.NRestarts,
          "0",
          "the agent never failed and was restarted by systemd",
        );
      },
    );

    await t.step(
      "systemctl stop leaves the chain and the pinned program: the kubelet's connects stay tagged",
      async () => {
        await machine.systemctl("stop", "lace-agent.service");
        const stopped = await machine.unitProperties("lace-agent.service", "ActiveState", "Result");
        // Result=success: it stopped on SIGTERM within TimeoutStopSec=, not killed.
        assert.deepEqual(stopped, { ActiveState: "inactive", Result: "success" });
        const after = connects().length;
        await waitFor(() => connects().length >= after + 20, {
          timeout: 20_000,
          message: "20 more kubelet connects",
        });
        assert.deepEqual(connects().slice(after).filter((c) => c.mark !== MARK), []);
        assert.equal(await Deno.readTextFile(conflist), chained);
      },
    );
  },
});
