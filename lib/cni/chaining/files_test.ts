/**
 * The node's CNI files as hostile input: each test plays whoever may write
 * the configuration or state directory (or a network plugin racing the
 * agent) against chaining, without root. tests/cni_files_test.ts plays
 * another user's files, which needs root.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { BRIDGE_CONF, CALICO, FLANNEL } from "./_fixtures.ts";
import { rewrite, world } from "./_world.ts";
import { MAX_ATTEMPTS } from "./apply.ts";
import { isPlainConfigName, readConfig } from "./file_read.ts";
import { putFile } from "./file_write.ts";
import { recordProblem } from "./state.ts";
import { sha256 } from "./plan.ts";

const SECRET = "root's own, not a CNI file\n";

/** A root-only file outside the configuration directory, as an attacker's target. */
async function victimIn(root: string): Promise<string> {
  const victim = join(root, "victim");
  await Deno.writeTextFile(victim, SECRET, { mode: 0o600 });
  return victim;
}

function assertUntouched(victim: string) {
  assert.equal(Deno.readTextFileSync(victim), SECRET);
  assert.equal(Deno.statSync(victim).mode! & 0o777, 0o600);
}

/** Bytes this process has read through read(2) and the like so far. */
function bytesRead(): number {
  return Number(/^rchar: (\d+)$/m.exec(Deno.readTextFileSync("/proc/self/io"))![1]);
}

const base64 = (text: string) => btoa(text);

Deno.test("Chainer never writes through a symlink planted at the name of its temporary files", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const victim = await victimIn(w.root);
  // The names the agent once used: predictable from its pid (visible with hostPID).
  await Deno.mkdir(w.stateDir, { mode: 0o700 });
  await Deno.symlink(victim, join(w.confDir, `.10-flannel.conflist.lace-${Deno.pid}.tmp`));
  await Deno.symlink(victim, join(w.stateDir, `.chained.json.lace-${Deno.pid}.tmp`));
  const pass = w.make().chainOnce();
  assertUntouched(victim);
  assert.deepStrictEqual(pass.chained, ["10-flannel.conflist"]);
  assert.equal(w.laces("10-flannel.conflist"), 1);
});

Deno.test("putFile() fails rather than write through a symlink at its temporary name, even one guessed", async () => {
  await using w = await world({});
  const victim = await victimIn(w.root);
  const random = crypto.getRandomValues;
  // The name's randomness taken away: only O_EXCL|O_NOFOLLOW stands between the write and the link.
  crypto.getRandomValues = (<T extends ArrayBufferView | null>(a: T) => a) as typeof random;
  try {
    await Deno.symlink(victim, join(w.confDir, `.lace-${"00".repeat(16)}.tmp`));
    const me = { uid: Deno.uid()!, gid: Deno.gid()!, mode: 0o644 };
    assert.throws(
      () =>
        putFile(w.confDir, "10-x.conflist", new TextEncoder().encode(FLANNEL), {
          expect: null,
          like: me,
        }),
      /EEXIST|exists/i,
    );
  } finally {
    crypto.getRandomValues = random;
  }
  assertUntouched(victim);
  assert.equal(readConfig(w.confDir, "10-x.conflist"), null);
});

Deno.test("Chainer refuses a configuration directory others may write, and writes nothing there", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  await Deno.chmod(w.confDir, 0o777);
  const chainer = w.make();
  for (const pass of [chainer.chainOnce(), chainer.restoreAll()]) {
    assert.deepStrictEqual(pass.chained, []);
    assert.equal(pass.reports[0]?.reason, "unsafe");
    assert.match(
      pass.reports[0].message,
      /configuration directory ".*net\.d" is writable by group or others \(mode 0777\).*writes nothing/,
    );
  }
  assert.equal(w.read("10-flannel.conflist"), FLANNEL);
  assert.throws(() => Deno.lstatSync(w.stateDir), Deno.errors.NotFound);
});

Deno.test("Chainer refuses a configuration directory whose parent others may write without the sticky bit", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  await Deno.chmod(w.root, 0o777);
  try {
    const [report] = w.make().chainOnce().reports;
    assert.equal(report.reason, "unsafe");
    assert.match(
      report.message,
      /its parent ".*lace-chain-[^"]*" is writable by group or others without the sticky bit/,
    );
    assert.equal(w.read("10-flannel.conflist"), FLANNEL);
  } finally {
    await Deno.chmod(w.root, 0o700);
  }
});

Deno.test("Chainer refuses a state directory others may write, and writes nothing", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  await Deno.mkdir(w.stateDir);
  await Deno.chmod(w.stateDir, 0o777);
  const [report] = w.make().chainOnce().reports;
  assert.equal(report.reason, "unsafe");
  assert.match(report.message, /CNI state directory ".*state" is writable by group or others/);
  assert.equal(w.read("10-flannel.conflist"), FLANNEL);
  assert.deepStrictEqual([...Deno.readDirSync(w.stateDir)], []);
});

Deno.test("Chainer reports a runtime file others may write and leaves it as it is", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  await Deno.chmod(join(w.confDir, "10-flannel.conflist"), 0o666);
  const pass = w.make().chainOnce();
  assert.deepStrictEqual(pass.chained, []);
  assert.equal(pass.reports[0].reason, "unsafe");
  assert.match(pass.reports[0].message, /is writable by group or others \(mode 0666\)/);
  assert.equal(w.read("10-flannel.conflist"), FLANNEL);
});

Deno.test("restoreAll refuses a state record naming a path outside the configuration directory", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const elsewhere = join(w.root, "elsewhere");
  await Deno.mkdir(elsewhere);
  const known = join(elsewhere, "known.txt");
  await Deno.writeTextFile(known, SECRET);
  // A record as someone who could write the state file would leave it: the restore would write
  // the chosen bytes at originalName and remove the known file, as root.
  const chosen = join(elsewhere, "chosen");
  await Deno.mkdir(w.stateDir, { mode: 0o700 });
  await Deno.writeTextFile(
    join(w.stateDir, "chained.json"),
    JSON.stringify({
      version: 1,
      records: [{
        dir: await Deno.realPath(w.confDir),
        file: "../elsewhere/known.txt",
        originalName: "../elsewhere/chosen",
        original: base64("chosen bytes"),
        chainedSha256: sha256(new TextEncoder().encode(SECRET)),
      }],
    }),
    { mode: 0o600 },
  );
  const pass = w.make().restoreAll();
  assert.equal(Deno.readTextFileSync(known), SECRET);
  assert.throws(() => Deno.lstatSync(chosen), Deno.errors.NotFound);
  const refused = pass.reports.filter((r) => r.reason === "bad-record");
  assert.equal(refused.length, 1);
  assert.match(refused[0].message, /names file "\.\.\/elsewhere\/known\.txt", not a configuration/);
  assert.equal(w.read("10-flannel.conflist"), FLANNEL);
});

Deno.test("restoreAll never writes through a symlink planted at a file it chained", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const chainer = w.make();
  chainer.chainOnce();
  // The chained bytes moved to a victim and a link left in their place: the record's hash matches.
  const victim = join(w.root, "victim.conflist");
  await Deno.writeTextFile(victim, w.read("10-flannel.conflist"), { mode: 0o600 });
  const chained = w.read("10-flannel.conflist");
  await Deno.remove(join(w.confDir, "10-flannel.conflist"));
  await Deno.symlink(victim, join(w.confDir, "10-flannel.conflist"));
  const pass = chainer.restoreAll();
  assert.equal(Deno.readTextFileSync(victim), chained);
  assert.equal(Deno.lstatSync(join(w.confDir, "10-flannel.conflist")).isSymlink, true);
  assert.equal(pass.reports[0].reason, "unsafe");
  assert.match(
    pass.reports[0].message,
    /Not restoring "10-flannel\.conflist": it is a symbolic link/,
  );
});

Deno.test("recordProblem() takes a record's names as plain configuration names of the directory", () => {
  const good = {
    dir: "/etc/cni/net.d",
    file: "10-bridge.conflist",
    originalName: "10-bridge.conf",
    original: base64(BRIDGE_CONF),
    chainedSha256: "a".repeat(64),
  };
  assert.equal(recordProblem(good), undefined);
  assert.equal(recordProblem({ ...good, file: "10-bridge.conf" }), undefined);
  assert.equal(
    recordProblem({ ...good, file: "10-x.conflist", originalName: "10-x.json" }),
    undefined,
  );
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ ...good, file: "../../etc/shadow.conflist" }, /names file .*not a configuration file/],
    [{ ...good, originalName: "/etc/passwd.conf" }, /names originalName/],
    [{ ...good, file: "..", originalName: ".." }, /not a configuration file/],
    [{ ...good, file: "x.txt", originalName: "x.txt" }, /not a configuration file/],
    [{ ...good, file: "a\0.conf", originalName: "a\0.conf" }, /not a configuration file/],
    [{ ...good, file: "20-other.conflist" }, /which chaining never makes of "10-bridge\.conf"/],
    [{ ...good, dir: "net.d" }, /not an absolute path/],
    [{ ...good, chainedSha256: "../x" }, /no sha256/],
    [{ ...good, original: "not base64!" }, /no original/],
    [{ ...good, original: 7 }, /lacks original/],
  ];
  for (const [record, why] of bad) assert.match(recordProblem(record) ?? "", why);
  assert.equal(isPlainConfigName("x".repeat(252) + ".conf"), false, "longer than NAME_MAX");
});

Deno.test("Chainer chains the network plugin's rewrite that lands between its read and its rename", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  const rewritten = FLANNEL.replace("cbr0", "cbr1");
  let rewrites = 0;
  const chainer = w.make({
    beforeCommit: (name) => {
      if (rewrites++ === 0) rewrite(w.confDir, name, rewritten);
    },
  });
  assert.deepStrictEqual(chainer.chainOnce().chained, ["10-flannel.conflist"]);
  assert.equal(w.laces("10-flannel.conflist"), 1);
  assert.match(w.read("10-flannel.conflist"), /cbr1/);
  chainer.restoreAll();
  assert.equal(w.read("10-flannel.conflist"), rewritten);
});

Deno.test("Chainer keeps a .conf the network plugin rewrote after the .conflist was written, and chains it", async () => {
  await using w = await world({ "10-bridge.conf": BRIDGE_CONF });
  const rewritten = BRIDGE_CONF.replace("cni0", "cni1");
  let done = false;
  const chainer = w.make({
    beforeCommit: (name) => {
      if (name === "10-bridge.conf" && !done) {
        done = true;
        rewrite(w.confDir, name, rewritten);
      }
    },
  });
  chainer.chainOnce();
  assert.equal(done, true, "the removal of the .conf was committed");
  assert.deepStrictEqual(w.names(), ["10-bridge.conflist"]);
  assert.match(w.read("10-bridge.conflist"), /cni1/);
  chainer.restoreAll();
  assert.deepStrictEqual(w.names(), ["10-bridge.conf"]);
  assert.equal(w.read("10-bridge.conf"), rewritten);
});

Deno.test("Chainer never replaces a .conflist another writer made while it converted the .conf", async () => {
  await using w = await world({ "10-bridge.conf": BRIDGE_CONF });
  let done = false;
  const pass = w.make({
    beforeCommit: (name) => {
      if (name === "10-bridge.conflist" && !done) {
        done = true;
        rewrite(w.confDir, name, CALICO);
      }
    },
  }).chainOnce();
  assert.equal(done, true, "the write of the .conflist was committed");
  assert.equal(w.read("10-bridge.conflist"), CALICO);
  assert.equal(w.read("10-bridge.conf"), BRIDGE_CONF);
  assert.deepStrictEqual(pass.chained, []);
  assert.equal(pass.reports[0].reason, "conflict");
});

Deno.test("restoreAll keeps a .conflist another writer put in place of the agent's before its removal", async () => {
  await using w = await world({ "10-bridge.conf": BRIDGE_CONF });
  w.make().chainOnce();
  // The network plugin writes its .conf again: the restore only removes the agent's .conflist...
  const newer = BRIDGE_CONF.replace("cni0", "cni2");
  rewrite(w.confDir, "10-bridge.conf", newer);
  // ...which another writer replaces just before that removal.
  let done = false;
  const pass = w.make({
    beforeCommit: (name) => {
      if (name === "10-bridge.conflist" && !done) {
        done = true;
        rewrite(w.confDir, name, CALICO);
      }
    },
  }).restoreAll();
  assert.equal(done, true, "the removal of the .conflist was committed");
  assert.equal(w.read("10-bridge.conflist"), CALICO);
  assert.equal(w.read("10-bridge.conf"), newer);
  assert.deepStrictEqual(pass.chained, []);
});

Deno.test("Chainer reports a file another writer changes on every attempt, and leaves it as they wrote it", async () => {
  await using w = await world({ "10-flannel.conflist": FLANNEL });
  let rewrites = 0;
  const pass = w.make({
    beforeCommit: (name) => rewrite(w.confDir, name, FLANNEL.replace("cbr0", `cbr${++rewrites}`)),
  }).chainOnce();
  assert.equal(rewrites, MAX_ATTEMPTS);
  assert.deepStrictEqual(pass.chained, []);
  assert.equal(w.read("10-flannel.conflist"), FLANNEL.replace("cbr0", `cbr${MAX_ATTEMPTS}`));
  const [report] = pass.reports;
  assert.equal(report.reason, "raced");
  assert.match(
    report.message,
    /another writer changed it between the agent's read and its write 3 times/,
  );
});

Deno.test("Chainer reads at most 1 MiB of a configuration file, whatever its size", async () => {
  await using w = await world({});
  // Sparse: 256 MiB that cost nothing on disk, and that a whole-file read would read in full.
  const big = join(w.confDir, "10-big.conflist");
  await Deno.writeTextFile(big, "", { mode: 0o644 });
  await Deno.truncate(big, 256 * 1024 * 1024);
  const before = bytesRead();
  const pass = w.make().chainOnce();
  const read = bytesRead() - before;
  assert.ok(read < 2 * 1024 * 1024, `read ${read} bytes`);
  assert.equal(pass.reports[0].reason, "unparsable");
  assert.match(
    pass.reports[0].message,
    /"10-big\.conflist" is 268435456 bytes, larger than 1048576/,
  );
});

Deno.test("Chainer does not read again a file unchanged since the last pass", async () => {
  // A 512 KiB configuration (a long plugin field), chained once; its mtime and its record's set
  // back, as files written long ago.
  const padded = FLANNEL.replace(
    '"type": "flannel",',
    `"type": "flannel", "pad": "${"x".repeat(512 * 1024)}",`,
  );
  await using w = await world({ "10-flannel.conflist": padded });
  const chainer = w.make();
  chainer.chainOnce();
  const old = new Date(Date.now() - 60_000);
  for (const path of [join(w.confDir, "10-flannel.conflist"), join(w.stateDir, "chained.json")]) {
    Deno.utimeSync(path, old, old);
  }
  chainer.chainOnce(); // reads both once more, now settled
  const before = bytesRead();
  const pass = chainer.chainOnce();
  const read = bytesRead() - before;
  assert.deepStrictEqual(pass.chained, ["10-flannel.conflist"]);
  assert.ok(read < 64 * 1024, `read ${read} bytes of an unchanged 512 KiB file and its record`);
  // A change is seen at once: the stamp differs.
  rewrite(w.confDir, "10-flannel.conflist", FLANNEL);
  chainer.chainOnce();
  assert.equal(w.laces("10-flannel.conflist"), 1);
  assert.doesNotMatch(w.read("10-flannel.conflist"), /"pad"/);
});
