/**
 * The node's CNI files as another user leaves them: a local user (nobody, through setpriv) who
 * owns the configuration directory, a runtime file or the chaining state directory plays against
 * root's chaining and `lace uninstall`. Root is needed to give files to another uid; the same
 * guards without another user are lib/cni/chaining/files_test.ts.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FLANNEL } from "../lib/cni/chaining/_fixtures.ts";
import { pluginDir } from "../lib/cni/chaining/_world.ts";
import { Chainer, type FileReport } from "../lib/cni/chaining/chainer.ts";
import { startChaining } from "../lib/agent/chaining.ts";
import { Metrics } from "../lib/agent/metrics.ts";
import { nodeObjectRef } from "../lib/kube/event_sink.ts";
import { runUninstallCommand } from "../lib/cli/uninstall_command.ts";
import { runDoctor } from "../lib/doctor/command.ts";
import { captureConsole } from "./helpers/capture_console.ts";
import { privilegedTests } from "./helpers/sim_world.ts";

const NOBODY = 65534;
const SECRET = "root's own, not a CNI file\n";
const privileged = privilegedTests(hasSetpriv() ? undefined : "needs setpriv (util-linux)");

function hasSetpriv(): boolean {
  try {
    return new Deno.Command("setpriv", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** Runs a shell script as nobody to its end; throws with its output when it fails. */
async function asNobody(script: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("setpriv", {
    args: [
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      "--clear-groups",
      "--",
      "sh",
      "-c",
      script,
      "sh",
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assert.ok(out.success, text.decode(out.stdout) + text.decode(out.stderr));
}

/**
 * A node's CNI directories under a fresh root-only directory that nobody may enter (0711):
 * net.d with the network plugin's file, the agent's state directory, and root's victim file.
 */
async function node() {
  const root = await Deno.makeTempDir({ prefix: "lace-cni-files-" });
  await Deno.chmod(root, 0o711);
  const confDir = join(root, "net.d");
  const stateDir = join(root, "state");
  const victim = join(root, "victim");
  await Deno.mkdir(confDir, { mode: 0o755 });
  await Deno.chmod(confDir, 0o755);
  await Deno.writeTextFile(join(confDir, "10-flannel.conflist"), FLANNEL, { mode: 0o644 });
  await Deno.writeTextFile(victim, SECRET, { mode: 0o600 });
  const reports: FileReport[] = [];
  return {
    root,
    confDir,
    stateDir,
    victim,
    reports,
    chainer: () =>
      new Chainer({
        confDir,
        stateDir,
        socket: "/run/lace/cni.sock",
        targets: [],
        onReport: (r) => reports.push(r),
      }),
    conf: () => Deno.readTextFileSync(join(confDir, "10-flannel.conflist")),
    assertVictimUntouched() {
      const info = Deno.statSync(victim);
      assert.equal(Deno.readTextFileSync(victim), SECRET);
      assert.deepStrictEqual([info.mode! & 0o777, info.uid, info.gid], [0o600, 0, 0]);
    },
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

privileged(
  "a local user who owns the CNI configuration directory cannot have root write through a symlink planted there",
  async () => {
    await using n = await node();
    await Deno.chown(n.confDir, NOBODY, NOBODY);
    // The temporary name the agent once used, predictable from its pid (visible with hostPID).
    await asNobody(
      'ln -s "$1" "$2"',
      n.victim,
      join(n.confDir, `.10-flannel.conflist.lace-${Deno.pid}.tmp`),
    );
    const pass = n.chainer().chainOnce();
    n.assertVictimUntouched();
    assert.equal(n.conf(), FLANNEL);
    assert.deepStrictEqual(pass.chained, []);
    assert.equal(pass.reports[0].reason, "unsafe");
    assert.match(
      pass.reports[0].message,
      /net\.d" is owned by uid 65534, not root[^]*writes nothing in it/,
    );
  },
);

privileged(
  "a runtime file another user owns is reported with a Warning Event and a metric, and never written",
  async () => {
    await using n = await node();
    await Deno.chown(join(n.confDir, "10-flannel.conflist"), NOBODY, NOBODY);
    const events: string[] = [];
    const metrics = new Metrics(() => undefined);
    const running = startChaining(
      {
        cniChaining: "auto",
        cniConfDir: n.confDir,
        cniStateDir: n.stateDir,
        cniBinDir: pluginDir(n.root),
        cniSocket: "/run/lace/cni.sock",
        cniChainFiles: [],
      },
      {
        metrics,
        events: {
          warn: (_o, reason, message) => events.push(`Warning ${reason} ${message}`),
          normal: (_o, reason, message) => events.push(`Normal ${reason} ${message}`),
        },
        node: nodeObjectRef("n1"),
        uninstalling: () => Promise.resolve(false),
      },
    );
    await running.stop();
    assert.equal(n.conf(), FLANNEL);
    assert.equal(Deno.statSync(join(n.confDir, "10-flannel.conflist")).uid, NOBODY);
    assert.equal(events.length, 1);
    assert.match(
      events[0],
      /^Warning CniFileUnsafe Not chaining "10-flannel\.conflist": it is owned by uid 65534, not root/,
    );
    assert.match(await metrics.text(), /lace_cni_chaining_total\{outcome="unsafe"\} 1/);
  },
);

privileged(
  "a lace plugin another user owns is never chained: a CniPluginMissing Warning Event and the no-plugin metric",
  async () => {
    await using n = await node();
    const binDir = pluginDir(n.root);
    await Deno.chown(join(binDir, "lace"), NOBODY, NOBODY);
    const events: string[] = [];
    const metrics = new Metrics(() => undefined);
    const running = startChaining(
      {
        cniChaining: "auto",
        cniConfDir: n.confDir,
        cniStateDir: n.stateDir,
        cniBinDir: binDir,
        cniSocket: "/run/lace/cni.sock",
        cniChainFiles: [],
      },
      {
        metrics,
        events: {
          warn: (_o, reason, message) => events.push(`Warning ${reason} ${message}`),
          normal: (_o, reason, message) => events.push(`Normal ${reason} ${message}`),
        },
        node: nodeObjectRef("n1"),
        uninstalling: () => Promise.resolve(false),
      },
    );
    await running.stop();
    assert.equal(n.conf(), FLANNEL);
    assert.equal(events.length, 1);
    assert.match(
      events[0],
      /^Warning CniPluginMissing The lace plugin ".*\/bin\/lace" is owned by uid 65534, not root, and the runtime runs it as root/,
    );
    assert.match(await metrics.text(), /lace_cni_chaining_total\{outcome="no-plugin"\} 1/);
  },
);

privileged(
  "without CAP_DAC_OVERRIDE, as under the chart, another user's unreadable runtime file is reported, not a failed pass",
  async () => {
    await using n = await node();
    const path = join(n.confDir, "10-flannel.conflist");
    await Deno.chown(path, NOBODY, NOBODY);
    await Deno.chmod(path, 0o600);
    const script = `
      import { Chainer } from ${
      JSON.stringify(new URL("../lib/cni/chaining/chainer.ts", import.meta.url).href)
    };
      const c = new Chainer({ confDir: ${JSON.stringify(n.confDir)}, stateDir: ${
      JSON.stringify(n.stateDir)
    }, socket: "/run/lace/cni.sock", targets: [] });
      console.log(JSON.stringify(c.chainOnce().reports));
    `;
    const out = await new Deno.Command("setpriv", {
      args: [
        "--bounding-set=-dac_override,-dac_read_search",
        "--",
        Deno.execPath(),
        "eval",
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    assert.ok(out.success, text.decode(out.stderr));
    const [report] = JSON.parse(text.decode(out.stdout).trim().split("\n").at(-1)!);
    assert.equal(report.reason, "unsafe");
    assert.match(report.message, /it is owned by uid 65534, not root/);
  },
);

privileged(
  "a chaining state directory another user owns is refused: no record is read or written there",
  async () => {
    await using n = await node();
    await Deno.mkdir(n.stateDir, { mode: 0o700 });
    await Deno.chown(n.stateDir, NOBODY, NOBODY);
    // The owner plants a lock that is a link to root's file, and a record naming it.
    await asNobody('ln -s "$1" "$2/chaining.lock"', n.victim, n.stateDir);
    const pass = n.chainer().chainOnce();
    n.assertVictimUntouched();
    assert.equal(n.conf(), FLANNEL);
    assert.equal(pass.reports[0].reason, "unsafe");
    assert.match(
      pass.reports[0].message,
      /CNI state directory ".*state" is owned by uid 65534, not root/,
    );
    assert.deepStrictEqual([...Deno.readDirSync(n.stateDir)].map((e) => e.name), ["chaining.lock"]);
  },
);

privileged(
  "a chained file keeps its group and mode, given on the new file's descriptor",
  async () => {
    await using n = await node();
    const path = join(n.confDir, "10-flannel.conflist");
    await Deno.chown(path, 0, NOBODY);
    await Deno.chmod(path, 0o640);
    assert.deepStrictEqual(n.chainer().chainOnce().chained, ["10-flannel.conflist"]);
    const info = Deno.statSync(path);
    assert.match(n.conf(), /"lace"/);
    assert.deepStrictEqual([info.uid, info.gid, info.mode! & 0o777], [0, NOBODY, 0o640]);
  },
);

privileged(
  "lace uninstall restores nothing through a configuration directory another user owns, and exits 1",
  async () => {
    await using n = await node();
    n.chainer().chainOnce();
    const chained = n.conf();
    await Deno.chown(n.confDir, NOBODY, NOBODY);
    const out = await captureConsole(() =>
      runUninstallCommand([
        "--cni-conf-dir",
        n.confDir,
        "--cni-state-dir",
        n.stateDir,
        "--pin-path",
        join(n.root, "no-pins"),
      ])
    );
    assert.equal(out.code, 1, out.out + out.err);
    assert.match(out.out, /net\.d" is owned by uid 65534, not root/);
    assert.match(out.err, /not restored/);
    assert.equal(n.conf(), chained);
  },
);

privileged(
  "lace doctor fails cni-files on a configuration directory another user owns",
  async () => {
    await using n = await node();
    await Deno.chown(n.confDir, NOBODY, NOBODY);
    const out = await captureConsole(() =>
      runDoctor([
        "--json",
        "--cni-conf-dir",
        n.confDir,
        "--cni-state-dir",
        n.stateDir,
        "--pin-path",
        join(n.root, "no-pins"),
        "--agent-socket",
        join(n.root, "no-agent.sock"),
      ])
    );
    const check = JSON.parse(out.out).checks.find((c: { name: string }) => c.name === "cni-files");
    assert.equal(check.ok, false);
    assert.match(check.message, /net\.d" is owned by uid 65534, not root/);
  },
);
