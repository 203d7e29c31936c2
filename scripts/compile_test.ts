import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../", import.meta.url));
import { V8_FLAGS } from "../lib/os/v8_flags.ts";
import { COMMANDS_MODULE } from "../main.ts";
import { PURGE_MODULE } from "../lib/cni/plugin.ts";
import { CLIENT_NODE_BUNDLE, CLIENT_NODE_BUNDLE_RECORD } from "./bundle.ts";
import {
  buildInfoFor,
  compileCommandArgs,
  denortHint,
  denortProblem,
  parseCompileArgs,
} from "./compile.ts";
import { BUILD_INFO_FILE } from "../lib/version.ts";

Deno.test("parseCompileArgs() defaults to dist/lace and takes --output and --target", () => {
  assert.deepEqual(parseCompileArgs([]), { output: "dist/lace" });
  assert.deepEqual(parseCompileArgs(["--output", "out/l", "--target=x86_64-unknown-linux-gnu"]), {
    output: "out/l",
    target: "x86_64-unknown-linux-gnu",
  });
  assert.throws(() => parseCompileArgs(["--outptu", "x"]), /Unknown argument "--outptu"/);
  assert.throws(() => parseCompileArgs(["--output"]), /Missing value for --output/);
});

Deno.test("compileCommandArgs() embeds the BPF object and compiles main.ts", () => {
  const args = compileCommandArgs({ output: "dist/lace" });
  assert.equal(args[0], "compile");
  assert.equal(args[args.indexOf("--include") + 1], "bpf/lace.bpf.o");
  assert.equal(args[args.indexOf("--output") + 1], "dist/lace");
  assert.equal(args.at(-1), "main.ts");
  // main.ts imports the commands through a variable, which deno compile cannot follow.
  assert.ok(args.some((a, i) => args[i - 1] === "--include" && a === COMMANDS_MODULE.slice(2)));
  // So does the CNI plugin its purge (lib/cni/plugin.ts's PURGE_MODULE, relative to it).
  const purge = join("lib/cni", PURGE_MODULE);
  assert.ok(args.some((a, i) => args[i - 1] === "--include" && a === purge), purge);
  assert.ok(args.some((a, i) => args[i - 1] === "--include" && a === CLIENT_NODE_BUNDLE));
  assert.ok(args.some((a, i) => args[i - 1] === "--include" && a === CLIENT_NODE_BUNDLE_RECORD));
  // lace version reads the build's commit and date there.
  const info = fileURLToPath(BUILD_INFO_FILE).slice(REPO.length);
  assert.ok(args.some((a, i) => args[i - 1] === "--include" && a === info), info);
});

const git = () => ({
  commit: "0123456789abcdef0123456789abcdef01234567",
  treeState: "clean" as const,
  commitDate: "2026-12-01T10:00:00+00:00",
  buildDate: "",
});

Deno.test("buildInfoFor() takes git's commit and the time of the build", () => {
  assert.deepEqual(buildInfoFor({}, git, new Date("2026-12-06T05:00:00.123Z")), {
    ...git(),
    buildDate: "2026-12-06T05:00:00Z",
  });
});

Deno.test("buildInfoFor() takes LACE_BUILD_COMMIT and SOURCE_DATE_EPOCH over git and the clock", () => {
  const env = { LACE_BUILD_COMMIT: "feedface", SOURCE_DATE_EPOCH: "1796000000" };
  assert.deepEqual(buildInfoFor(env, git, new Date()), {
    commit: "feedface",
    treeState: "",
    commitDate: "",
    buildDate: "2026-11-30T00:53:20Z",
  });
  assert.throws(
    () => buildInfoFor({ SOURCE_DATE_EPOCH: "yesterday" }, git, new Date()),
    /SOURCE_DATE_EPOCH must be whole seconds since 1970: "yesterday"/,
  );
});

Deno.test("compileCommandArgs() builds Lace's V8 flags into the binary", () => {
  assert.ok(
    compileCommandArgs({ output: "dist/lace" }).includes(`--v8-flags=${V8_FLAGS.join(",")}`),
  );
});

Deno.test("denortProblem() refuses a missing file and the deno CLI itself", async () => {
  assert.match(denortProblem("/nonexistent/denort", Deno.execPath())!, /does not exist/);
  assert.match(denortProblem(Deno.execPath(), Deno.execPath())!, /is the deno CLI itself/);
  const dir = await Deno.makeTempDir({ prefix: "lace-denort-" });
  try {
    const plain = join(dir, "denort");
    await Deno.writeTextFile(plain, "");
    assert.match(denortProblem(plain, Deno.execPath())!, /not an executable file/);
    await Deno.chmod(plain, 0o755);
    assert.equal(denortProblem(plain, Deno.execPath()), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("denortHint() explains a real deno compile that cannot download denort", async () => {
  // A fresh DENO_DIR (no cached denort) and an unreachable loopback proxy make the download fail
  // the same way on any machine, networked or not.
  const dir = await Deno.makeTempDir({ prefix: "lace-compile-" });
  try {
    await Deno.writeTextFile(join(dir, "m.ts"), "console.log(1);\n");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["compile", "--output", join(dir, "m"), join(dir, "m.ts")],
      cwd: dir,
      env: {
        DENO_DIR: join(dir, "deno_dir"),
        HTTPS_PROXY: "http://127.0.0.1:9",
        HTTP_PROXY: "http://127.0.0.1:9",
        NO_COLOR: "1",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.notEqual(out.code, 0, "compile without denort must fail");
    const text = new TextDecoder().decode(out.stderr);
    assert.match(denortHint(text, undefined)!, /DENORT_BIN=\/path\/to\/denort/);
    assert.match(denortHint(text, "/opt/denort")!, /could not use DENORT_BIN "\/opt\/denort"/);
    assert.equal(denortHint("error: Type checking failed.", undefined), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
