/**
 * A local user who is not root, on a node whose bpffs is
 * world-writable (mode 1777, as bpffs is when mounted without a mode), plays
 * against Lace's pins. Each test runs the attacker as `nobody` through
 * setpriv, under a pin path of its own whose parent it makes world-writable
 * and sticky (as /sys/fs/bpf is then), and removes everything it made.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Datapath } from "../lib/datapath/loader.ts";
import { runUninstallCommand } from "../lib/cli/uninstall_command.ts";
import {
  linkPinName,
  MAP_NAMES,
  pathExists,
  pinnedLayouts,
  pinnedLinkStatus,
  uninstall,
} from "../lib/datapath/pins.ts";
import { PIN_LOCK_TIMEOUT_MS } from "../lib/datapath/migration.ts";
import { runDoctor } from "../lib/doctor/command.ts";
import { captureConsole } from "./helpers/capture_console.ts";
import { CgroupTree } from "./helpers/cgroup_fixture.ts";
import { Releases } from "./helpers/releases.ts";
import { privilegedTests, testPinPath } from "./helpers/sim_world.ts";
import { waitFor } from "./helpers/wait.ts";

const NOBODY = 65534;
const privileged = privilegedTests(hasSetpriv() ? undefined : "needs setpriv (util-linux)");

function hasSetpriv(): boolean {
  try {
    return new Deno.Command("setpriv", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

const AS_NOBODY = [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "--"];

/** Runs a shell script as nobody to its end: its exit code and what it printed. */
async function asNobody(script: string, ...args: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command("setpriv", {
    args: [...AS_NOBODY, "sh", "-c", script, "sh", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, out: text.decode(out.stdout) + text.decode(out.stderr) };
}

/**
 * A process of nobody's that opens `dir` and holds a flock on it (`-s` shared, `-x`
 * exclusive) for as long as it lives; or exits at once when it cannot.
 */
class NobodyLock implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  #output = "";
  #exited: number | undefined;
  readonly #done: Promise<void>;

  constructor(dir: string, mode: "-s" | "-x") {
    // One process holds the descriptor (no fork), so killing it releases the lock.
    const script = 'exec 9<"$1" || exit 3; flock -n "$2" 9 || exit 4; echo held; exec sleep 600';
    this.#child = new Deno.Command("setpriv", {
      args: [...AS_NOBODY, "sh", "-c", script, "sh", dir, mode],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const read = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) this.#output += chunk;
    };
    this.#done = Promise.all([read(this.#child.stdout), read(this.#child.stderr)]).then(() => {});
    this.#child.status.then((s) => this.#exited = s.code);
  }

  /** Waits until the attacker holds the lock (true) or gave up (false). */
  async settled(): Promise<boolean> {
    await waitFor(() => this.#output.includes("held") || this.#exited !== undefined, {
      message: "the attacker to take its lock or give up",
    });
    return this.#output.includes("held");
  }

  get output(): string {
    return this.#output;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
    await this.#child.status;
    await this.#done;
  }
}

/**
 * A pin path `<parent>/lace` whose parent is world-writable and sticky, as a
 * bpffs mounted without a mode is; removed with everything under it.
 */
class ExposedPinPath implements Disposable {
  readonly parent = testPinPath();
  readonly pinPath = join(this.parent, "lace");

  constructor() {
    Deno.mkdirSync(this.parent);
    Deno.chmodSync(this.parent, 0o1777);
  }

  [Symbol.dispose](): void {
    for (const path of [this.pinPath, `${this.pinPath}_moved`]) {
      try {
        uninstall(path);
      } catch {
        // Not there.
      }
    }
    Deno.removeSync(this.parent, { recursive: true });
  }
}

/** Starts an agent's datapath on `pinPath` and attaches it to `cgroup`; the caller closes it. */
function attached(pinPath: string, cgroup: string, object?: Uint8Array): Datapath {
  const datapath = Datapath.open({ pinPath, object });
  try {
    datapath.attach(cgroup);
    return datapath;
  } catch (e) {
    datapath.close();
    throw e;
  }
}

privileged(
  "the agent refuses a pin directory a local user created first, naming its owner",
  async () => {
    using exposed = new ExposedPinPath();
    const made = await asNobody('mkdir "$1"', exposed.pinPath);
    assert.equal(made.code, 0, made.out);
    assert.throws(
      () => Datapath.open({ pinPath: exposed.pinPath }).close(),
      /owned by uid 65534, not root[^]*rm -r/,
    );
    assert.deepEqual([...Deno.readDirSync(exposed.pinPath)], [], "nothing pinned in it");
  },
);

privileged(
  "a local user cannot unlink or rename Lace's link pins, even after creating " +
    "the pin directory first",
  async () => {
    using exposed = new ExposedPinPath();
    await using cgroups = CgroupTree.create();
    const kubelet = cgroups.mkdir("kubelet");
    assert.equal((await asNobody('mkdir "$1"', exposed.pinPath)).code, 0);
    let datapath: Datapath;
    try {
      datapath = attached(exposed.pinPath, kubelet);
    } catch (e) {
      if (!/owned by uid 65534/.test(String(e))) throw e;
      // Refused, as the error says to: root removes the user's directory and starts again.
      Deno.removeSync(exposed.pinPath, { recursive: true });
      datapath = attached(exposed.pinPath, kubelet);
    }
    using _datapath = datapath;
    const link4 = join(exposed.pinPath, linkPinName("connect4"));
    const link6 = join(exposed.pinPath, linkPinName("connect6"));
    const attack = await asNobody(
      'rm -f "$1"; mv "$2" "$2_x"; mv "$3" "$3_moved"; true',
      link4,
      link6,
      exposed.pinPath,
    );
    for (const program of ["connect4", "connect6"] as const) {
      const status = pinnedLinkStatus(exposed.pinPath, program);
      assert.ok(
        status.pinned && status.alive,
        `${program} still pinned and attached: ${attack.out}`,
      );
    }
  },
);

privileged(
  "a local user cannot hold the pin lock, so the agent starts and attaches at once",
  async () => {
    using exposed = new ExposedPinPath();
    await using cgroups = CgroupTree.create();
    const kubelet = cgroups.mkdir("kubelet");
    attached(exposed.pinPath, kubelet).close();
    await using attacker = new NobodyLock(exposed.pinPath, "-x");
    const held = await attacker.settled();
    const started = performance.now();
    using _again = attached(exposed.pinPath, kubelet);
    const ms = performance.now() - started;
    assert.equal(held, false, `nobody took the lock on the pin path: ${attacker.output}`);
    assert.ok(ms < PIN_LOCK_TIMEOUT_MS / 2, `start and attach took ${Math.round(ms)} ms`);
  },
);

privileged(
  "a local user cannot fake a live newer agent with a shared lock on its layout, " +
    "so a rolled-back agent takes the links over",
  async () => {
    using exposed = new ExposedPinPath();
    await using cgroups = CgroupTree.create();
    await using releases = await Releases.create();
    const kubelet = cgroups.mkdir("kubelet");
    // A newer release ran here and is gone (rolled back): its layout's maps stay pinned.
    const next = await Deno.readFile(await releases.nextLayout());
    let newerLayout: string;
    {
      using newer = attached(exposed.pinPath, kubelet, next);
      newerLayout = newer.layoutDir;
    }
    await using attacker = new NobodyLock(newerLayout, "-s");
    const held = await attacker.settled();
    using older = attached(exposed.pinPath, kubelet);
    assert.equal(older.standingBy, undefined);
    assert.ok(
      older.links().every((l) => l.current),
      "the links run the rolled-back agent's program",
    );
    assert.equal(held, false, `nobody took a shared lock on ${newerLayout}: ${attacker.output}`);
    assert.equal(pathExists(newerLayout), false, "the gone agent's layout is removed");
  },
);

privileged(
  "a pin lock a local user kept through a descriptor from before the pin path was " +
    "made 0700 is refused at once, naming the process to stop",
  async () => {
    using exposed = new ExposedPinPath();
    // As a release before this one left it: root's, 0755.
    Deno.mkdirSync(exposed.pinPath);
    Deno.chmodSync(exposed.pinPath, 0o755);
    await using attacker = new NobodyLock(exposed.pinPath, "-x");
    assert.ok(await attacker.settled(), `the attacker holds its lock: ${attacker.output}`);
    const started = performance.now();
    assert.throws(
      () => Datapath.open({ pinPath: exposed.pinPath }).close(),
      /is locked, and only pid \d+ \(uid 65534, sleep\) has it open, not a Lace agent[^]*kill \d+/,
    );
    const ms = performance.now() - started;
    assert.ok(ms < PIN_LOCK_TIMEOUT_MS / 2, `refused after ${Math.round(ms)} ms`);
    assert.equal(Deno.statSync(exposed.pinPath).mode! & 0o777, 0o700, "tightened meanwhile");
  },
);

privileged(
  "a shared lock a local user kept on a layout directory from before it was made " +
    "0700 does not keep a rolled-back agent standing by",
  async () => {
    using exposed = new ExposedPinPath();
    await using cgroups = CgroupTree.create();
    await using releases = await Releases.create();
    const kubelet = cgroups.mkdir("kubelet");
    const next = await Deno.readFile(await releases.nextLayout());
    let newerLayout: string;
    {
      using newer = attached(exposed.pinPath, kubelet, next);
      newerLayout = newer.layoutDir;
    }
    // As a release before this one made them: root's, 0755, so the attacker could open them.
    Deno.chmodSync(exposed.pinPath, 0o755);
    Deno.chmodSync(newerLayout, 0o755);
    await using attacker = new NobodyLock(newerLayout, "-s");
    assert.ok(await attacker.settled(), `the attacker holds its lock: ${attacker.output}`);
    using older = attached(exposed.pinPath, kubelet);
    assert.equal(older.standingBy, undefined);
    assert.ok(
      older.links().every((l) => l.current),
      "the links run the rolled-back agent's program",
    );
  },
);

privileged(
  "lace doctor names a local user's process that holds a pin directory open",
  async () => {
    using exposed = new ExposedPinPath();
    Datapath.open({ pinPath: exposed.pinPath }).close();
    // As a release before this one left it, while the attacker opened it.
    Deno.chmodSync(exposed.pinPath, 0o755);
    await using attacker = new NobodyLock(exposed.pinPath, "-x");
    assert.ok(await attacker.settled(), `the attacker holds its lock: ${attacker.output}`);
    const out = await captureConsole(() =>
      runDoctor(["--json", `--pin-path=${exposed.pinPath}`, "--agent-socket=/nonexistent.sock"])
    );
    const checks = (JSON.parse(out.out) as { checks: { name: string; message: string }[] }).checks;
    const openers = checks.find((c) => c.name === "pin-dir-openers");
    assert.match(openers?.message ?? "", /\(uid 65534, sleep\) on ".*\/lace"/, out.out);
    assert.match(
      checks.find((c) => c.name === "pin-dirs")?.message ?? "",
      /readable by group or others \(mode 0755\)/,
    );
  },
);

privileged(
  "lace uninstall never follows a pin path a local user made a symlink to another " +
    "program's pins",
  async () => {
    using exposed = new ExposedPinPath();
    // Another program's pins, with the names Lace removes: here another Lace's pin path.
    const other = join(exposed.parent, "other");
    Datapath.open({ pinPath: other }).close();
    const theirs = pinnedLayouts(other).flatMap((l) => MAP_NAMES.map((m) => join(l.dir, m)));
    assert.equal(theirs.length, MAP_NAMES.length);
    assert.equal((await asNobody('ln -s "$1" "$2"', other, exposed.pinPath)).code, 0);
    // The CNI part of uninstall gets empty directories of its own: the machine's stay untouched.
    const cni = Deno.makeTempDirSync({ prefix: "lace-uninstall-cni-" });
    let out: { code: number; err: string };
    try {
      out = await captureConsole(() =>
        runUninstallCommand([
          `--pin-path=${exposed.pinPath}`,
          `--cni-conf-dir=${cni}/net.d`,
          `--cni-state-dir=${cni}/state`,
        ])
      );
    } finally {
      Deno.removeSync(cni, { recursive: true });
    }
    assert.deepEqual(theirs.filter((p) => !pathExists(p)), [], "the other program's pins stay");
    assert.equal(out.code, 1);
    assert.match(out.err, /^lace uninstall: no pins removed: Pin path ".*" is a symbolic link\./m);
    uninstall(other);
  },
);
