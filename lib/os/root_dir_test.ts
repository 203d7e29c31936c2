import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ensureRootDir,
  judgeParent,
  judgeRootDir,
  judgeRootFile,
  rootDirProblem,
  sharedDirProblem,
} from "./root_dir.ts";
import { needsRoot, skipIf } from "../../tests/helpers/skip.ts";

const ROOT = 0;
const dir = (mode: number, uid = ROOT) => ({ isSymlink: false, isDirectory: true, uid, mode });

Deno.test("judgeRootDir() accepts root's 0700, tightens root's readable modes, refuses the rest", () => {
  const cases: [ReturnType<typeof dir>, string][] = [
    [dir(0o40700), "ok"],
    [dir(0o700), "ok"],
    [dir(0o755), "tighten"],
    [dir(0o750), "tighten"],
    [dir(0o701), "tighten"],
    [dir(0o775), "refuse"],
    [dir(0o757), "refuse"],
    [dir(0o1777), "refuse"],
    [dir(0o700, 65534), "refuse"],
    [{ ...dir(0o700), isSymlink: true, isDirectory: false }, "refuse"],
    [{ ...dir(0o700), isDirectory: false }, "refuse"],
  ];
  for (const [stat, kind] of cases) {
    assert.equal(
      judgeRootDir(stat, ROOT).kind,
      kind,
      `mode ${stat.mode.toString(8)} uid ${stat.uid}`,
    );
  }
});

Deno.test("judgeRootDir() says who owns a refused directory and why that matters", () => {
  const verdict = judgeRootDir(dir(0o700, 65534), ROOT);
  assert.equal(verdict.kind, "refuse");
  assert.match(verdict.kind === "refuse" ? verdict.reason : "", /owned by uid 65534, not root/);
});

Deno.test("judgeParent() allows root's directories and sticky world-writable ones, nothing else", () => {
  assert.equal(judgeParent(dir(0o755), ROOT), undefined);
  assert.equal(judgeParent(dir(0o1777), ROOT), undefined);
  assert.match(judgeParent(dir(0o777), ROOT) ?? "", /without the sticky bit \(mode 0777\)/);
  assert.match(judgeParent(dir(0o755, 1000), ROOT) ?? "", /owned by uid 1000/);
});

Deno.test("judgeRootFile() accepts root's regular files others may only read, nothing else", () => {
  const file = (mode: number, uid = ROOT) => ({ isSymlink: false, isFile: true, uid, mode });
  assert.equal(judgeRootFile(file(0o100644), ROOT), undefined);
  assert.equal(judgeRootFile(file(0o600), ROOT), undefined);
  assert.equal(judgeRootFile(file(0o644), 1000), undefined, "root's, for an agent of uid 1000");
  assert.equal(judgeRootFile(file(0o644, 1000), 1000), undefined, "the agent's own");
  assert.match(judgeRootFile(file(0o644, 65534), ROOT) ?? "", /owned by uid 65534, not root/);
  assert.match(judgeRootFile(file(0o664), ROOT) ?? "", /writable by group or others \(mode 0664\)/);
  assert.match(judgeRootFile(file(0o646), ROOT) ?? "", /mode 0646/);
  assert.match(
    judgeRootFile({ ...file(0o777), isSymlink: true, isFile: false }, ROOT) ?? "",
    /is a symbolic link/,
  );
  assert.match(judgeRootFile({ ...file(0o600), isFile: false }, ROOT) ?? "", /not a regular file/);
});

Deno.test("sharedDirProblem() lets others read the directory, not write it or its parents", () => {
  withTemp((tmp) => {
    const me = Deno.uid()!;
    const dir = join(tmp, "net.d");
    Deno.mkdirSync(dir);
    Deno.chmodSync(dir, 0o755);
    assert.equal(sharedDirProblem(dir, me), undefined);
    assert.equal(modeOf(dir), 0o755, "nothing tightened");
    Deno.chmodSync(dir, 0o775);
    assert.match(sharedDirProblem(dir, me) ?? "", /writable by group or others \(mode 0775\)/);
    Deno.chmodSync(dir, 0o755);
    Deno.chmodSync(tmp, 0o777);
    assert.match(
      sharedDirProblem(dir, me) ?? "",
      /its parent ".*lace-root-dir-[^"]*" is writable by group or others without the sticky bit/,
    );
    Deno.chmodSync(tmp, 0o700);
    Deno.symlinkSync(dir, join(tmp, "link"));
    assert.match(sharedDirProblem(join(tmp, "link"), me) ?? "", /is a symbolic link/);
  });
});

const asRoot = { ignore: skipIf(needsRoot("files of other users")) };

function withTemp(fn: (tmp: string) => void): void {
  const tmp = Deno.makeTempDirSync({ prefix: "lace-root-dir-" });
  try {
    fn(tmp);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
}

const modeOf = (path: string) => Deno.lstatSync(path).mode! & 0o7777;

Deno.test({
  name: "ensureRootDir() creates a missing directory and its missing parents 0700",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      const path = join(tmp, "a", "b");
      assert.equal(ensureRootDir(path, "Test dir"), "created");
      assert.equal(modeOf(path), 0o700);
      assert.equal(modeOf(join(tmp, "a")), 0o700);
      assert.equal(ensureRootDir(path, "Test dir"), "ok");
    }),
});

Deno.test({
  name: "ensureRootDir() tightens root's 0755 directory (an older release's, the kubelet's " +
    "DirectoryOrCreate) to 0700, keeping what it holds",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      const path = join(tmp, "run-lace");
      Deno.mkdirSync(path);
      Deno.chmodSync(path, 0o755);
      Deno.writeTextFileSync(join(path, "kept"), "x");
      assert.equal(ensureRootDir(path, "Test dir"), "tightened");
      assert.equal(modeOf(path), 0o700);
      assert.equal(Deno.readTextFileSync(join(path, "kept")), "x");
    }),
});

Deno.test({
  name: "ensureRootDir() refuses a directory writable by others and leaves it as it is",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      const path = join(tmp, "open");
      Deno.mkdirSync(path);
      Deno.chmodSync(path, 0o777);
      assert.throws(
        () => ensureRootDir(path, "Test dir"),
        /Test dir ".*open" is writable by group or others \(mode 0777\)[^]*chmod 0700/,
      );
      assert.equal(modeOf(path), 0o777);
    }),
});

Deno.test({
  name: "ensureRootDir() refuses a directory another user owns, naming the uid and the fix",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      const path = join(tmp, "theirs");
      Deno.mkdirSync(path, { mode: 0o700 });
      Deno.chownSync(path, 65534, 65534);
      assert.throws(() => ensureRootDir(path, "Test dir"), /owned by uid 65534, not root[^]*rm -r/);
      assert.equal(rootDirProblem(path, "Test dir")?.tightenable, false);
    }),
});

Deno.test({
  name: "ensureRootDir() refuses a symbolic link, even to a good directory",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      const target = join(tmp, "real");
      Deno.mkdirSync(target, { mode: 0o700 });
      Deno.symlinkSync(target, join(tmp, "link"));
      assert.throws(() => ensureRootDir(join(tmp, "link"), "Test dir"), /is a symbolic link/);
    }),
});

Deno.test({
  name: "ensureRootDir() refuses a directory whose parent others may write without the sticky " +
    "bit, and accepts one under a sticky world-writable parent",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      const parent = join(tmp, "parent");
      Deno.mkdirSync(parent);
      Deno.chmodSync(parent, 0o777);
      assert.throws(
        () => ensureRootDir(join(parent, "lace"), "Test dir"),
        /its parent ".*parent" is writable by group or others without the sticky bit/,
      );
      Deno.chmodSync(parent, 0o1777);
      assert.equal(ensureRootDir(join(parent, "lace"), "Test dir"), "ok");
    }),
});

Deno.test({
  name: "rootDirProblem() reports nothing for root's 0700 directory or a missing one",
  ...asRoot,
  fn: () =>
    withTemp((tmp) => {
      Deno.chmodSync(tmp, 0o700);
      assert.equal(rootDirProblem(tmp, "Test dir"), undefined);
      assert.equal(rootDirProblem(join(tmp, "missing"), "Test dir"), undefined);
      Deno.chmodSync(tmp, 0o755);
      assert.deepEqual(rootDirProblem(tmp, "Test dir")?.tightenable, true);
    }),
});
