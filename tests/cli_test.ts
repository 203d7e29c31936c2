/**
 * The command line as an operator meets it: every subcommand's help, flag and
 * environment precedence, and bad input as a one-line error with exit code 2.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { uninstall } from "../lib/datapath/pins.ts";
import { testPinPath } from "./helpers/sim_world.ts";
import { needsRoot, skipIf } from "./helpers/skip.ts";

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));

async function lace(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

const COMMANDS = [
  "agent",
  "targets",
  "doctor",
  "netcheck",
  "uninstall",
  "version",
  "demo",
  "completion",
  "kubectl",
];

Deno.test("lace --help lists every command and exits 0", async () => {
  const r = await lace(["--help"]);
  assert.equal(r.code, 0);
  for (const c of COMMANDS) assert.match(r.stdout, new RegExp(`^  ${c} `, "m"), c);
  assert.doesNotMatch(r.stdout, /__prober|__pod-server/);
});

for (const command of COMMANDS) {
  Deno.test(`lace ${command} -h and --help print its usage and flags and exit 0`, async () => {
    for (const flag of ["-h", "--help"]) {
      const r = await lace([command, flag]);
      assert.equal(r.code, 0, r.stderr);
      // kubectl's plugin says how kubectl runs it.
      const usage = command === "kubectl" ? "kubectl lace" : `lace ${command}`;
      assert.match(r.stdout, new RegExp(`^Usage: ${usage}`), flag);
      assert.match(r.stdout, /^ {2}-h, --help {2,}Show this help$/m, flag);
      assert.equal(r.stderr, "", flag);
    }
  });

  Deno.test(`lace ${command} refuses an unknown flag with one line and exit code 2`, async () => {
    const r = await lace([command, "--no-such-flag"]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(
      r.stderr,
      `lace ${command}: unknown flag --no-such-flag: see lace ${command} --help\n`,
    );
  });
}

Deno.test("lace help COMMAND and a subcommand's -h print the command's help", async () => {
  const help = await lace(["help", "doctor"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage: lace doctor/);
  assert.match(help.stdout, /^Commands:\n {2}probes {2,}\S/m);
  for (const args of [["doctor", "probes", "-h"], ["doctor", "pod", "default/web", "--help"]]) {
    const r = await lace(args);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, help.stdout, args.join(" "));
  }
});

Deno.test("lace without a command prints usage and exits 2; an unknown command exits 2", async () => {
  const bare = await lace([]);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /^Usage: lace <command> \[flags\]/m);
  const r = await lace(["frobnicate"]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'lace: unknown command "frobnicate": run lace --help for the commands\n');
  const flag = await lace(["--frobnicate"]);
  assert.equal(flag.code, 2);
  assert.equal(
    flag.stderr,
    'lace: unknown flag "--frobnicate": run lace --help for the commands\n',
  );
});

Deno.test("lace agent reports a bad environment value as a one-line error with exit code 2", async () => {
  const r = await lace(["agent", "--node-name=n"], { LACE_MARK_SHIFT: "twelve" });
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'lace agent: LACE_MARK_SHIFT must be a whole number: "twelve"\n');
});

Deno.test("lace agent prefers the flag over the environment when both are bad or good", async () => {
  // The flag wins: a good flag hides a bad environment value…
  const overlapEnv = await lace([
    "agent",
    "--node-name=n",
    "--probe-mark=0x10000",
    "--mark-shift=8",
  ], {
    LACE_PROBE_MARK: "0x1000",
  });
  assert.equal(overlapEnv.code, 2);
  assert.match(overlapEnv.stderr, /Probe mark 0x10000 overlaps the network bits 0xffff00/);
  // …and a bad flag is reported even when the environment is fine.
  const badFlag = await lace(["agent", "--node-name=n", "--debounce=soon"], {
    LACE_DEBOUNCE: "5ms",
  });
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /--debounce must be a duration such as 500ms, 5s or 1m30s: "soon"/);
});

const REFUSED: [string, RegExp][] = [
  ["--metrics-addr=127.0.0.1:99999", /Metrics address port must be 1\.\.65535/],
  ["--resync-interval=600h", /--resync-interval must be at most 596h/],
  ["--resync-interval=48h", /Resync interval must be 1s\.\.24h/],
  ["--cni-socket=relative/path", /CNI socket must be an absolute path/],
  ["--agent-socket=run/agent.sock", /Agent socket must be an absolute path/],
];

for (const [flag, message] of REFUSED) {
  Deno.test(`lace agent refuses ${flag} with exit code 2 before it pins anything`, async () => {
    const pinPath = `/sys/fs/bpf/lace-cli-test-${crypto.randomUUID().slice(0, 8)}`;
    const r = await lace([
      "agent",
      "--no-kube-api",
      "--pods-dir=/nonexistent/pods",
      `--pin-path=${pinPath}`,
      flag,
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
    await assert.rejects(Deno.stat(pinPath), Deno.errors.NotFound, "nothing pinned");
  });
}

Deno.test("lace agent reports every bad value at once, one line each", async () => {
  const r = await lace([
    "agent",
    "--node-name=n",
    "--metrics-addr=127.0.0.1:99999",
    "--resync-interval=48h",
    "--cni-socket=relative/path",
  ]);
  assert.equal(r.code, 2);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 3, r.stderr);
  for (const line of lines) assert.match(line, /^lace agent: /);
});

Deno.test("lace agent without a node name for the API says how to give one", async () => {
  const r = await lace(["agent"], { NODE_NAME: "" });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /set --node-name or NODE_NAME/);
});

Deno.test("lace version prints the version from deno.json and, from source, git's commit", async () => {
  const { version } = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const r = await lace(["version", "--json"]);
  assert.equal(r.code, 0);
  const info = JSON.parse(r.stdout);
  assert.equal(info.version, version);
  const head = await new Deno.Command("git", {
    args: ["-C", fileURLToPath(new URL("..", import.meta.url)), "rev-parse", "HEAD"],
    stdout: "piped",
  }).output();
  assert.equal(info.commit, new TextDecoder().decode(head.stdout).trim());
  assert.match(info.commitDate, /^\d{4}-\d\d-\d\dT/);
  assert.equal(info.buildDate, "", "run from source, not built");
  const text = await lace(["version"]);
  assert.equal(
    text.stdout,
    `lace ${version} (commit ${info.commit.slice(0, 12)}${
      info.treeState === "dirty" ? "-dirty" : ""
    }, run from source, bpf abi ${info.bpfAbi}, deno ${Deno.version.deno})\n`,
  );
});

const PRINTING_DATA = ["targets", "doctor", "netcheck", "version", "demo"];

for (const command of PRINTING_DATA) {
  Deno.test(`lace ${command} takes -o/--output text|json, and --json as its alias`, async () => {
    const r = await lace([command, "--help"]);
    assert.match(
      r.stdout,
      /^ {2}-o, --output text\|json {2,}Output format \(default text; env LACE_OUTPUT\)$/m,
    );
    assert.match(r.stdout, /^ {6}--json {2,}Same as --output json \(env LACE_JSON\)$/m);
    const bad = await lace([command, "-o", "yaml"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.equal(bad.stderr, `lace ${command}: --output must be one of text, json: "yaml"\n`);
    const both = await lace([command, "--json", "-o", "text"]);
    assert.equal(both.code, 2, both.stderr);
    assert.equal(
      both.stderr,
      `lace ${command}: --output and --json both set the same option: give one\n`,
    );
  });
}

Deno.test("lace version prints the same JSON with -o json, --output=json, --json and LACE_OUTPUT", async () => {
  const outputs = await Promise.all([
    lace(["version", "-o", "json"]),
    lace(["version", "--output=json"]),
    lace(["version", "--json"]),
    lace(["version"], { LACE_OUTPUT: "json" }),
    lace(["version", "-o", "json"], { LACE_JSON: "false" }),
  ]);
  for (const r of outputs) {
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), JSON.parse(outputs[0].stdout));
  }
  // The flag given beats the alias's variable.
  const text = await lace(["version", "-o", "text"], { LACE_JSON: "1" });
  assert.match(text.stdout, /^lace \d+\.\d+\.\d+ /);
});

Deno.test("lace targets falls back to the pinned map and says clearly when there is none", async () => {
  const r = await lace([
    "targets",
    "--agent-socket=/nonexistent/lace/agent.sock",
    "--pin-path=/nonexistent/lace",
  ]);
  assert.equal(r.code, 1);
  // The first line says what is missing and why; the lines below it are its causes.
  const [first, ...causes] = r.stderr.trim().split("\n");
  assert.match(
    first,
    /^lace targets: No pinned map at "\/nonexistent\/lace\/probe_targets": the agent has not run/,
  );
  assert(causes.every((line) => line.startsWith("caused by: ")), r.stderr);
  assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
});

Deno.test({
  name: "lace agent prints the whole cause chain, so the --pods-dir hint reaches stderr",
  // The datapath opens (pins under bpffs) before the pods directory is read.
  ignore: skipIf(needsRoot("bpffs pins")),
  async fn() {
    const pinPath = testPinPath();
    try {
      const r = await lace([
        "agent",
        "--no-kube-api",
        "--pods-dir=/nonexistent/pods",
        `--pin-path=${pinPath}`,
        "--kubelet-cgroup=/sys/fs/cgroup/lace-cli-test-absent",
        "--metrics-addr=",
        "--log-format=text",
      ]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^lace agent: Agent could not start$/m);
      assert.match(r.stderr, /^caused by: Pod source "dir" failed to start$/m);
      assert.match(
        r.stderr,
        /^caused by: Cannot read the pods directory "\/nonexistent\/pods": create it or fix --pods-dir$/m,
      );
      assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
    } finally {
      uninstall(pinPath);
    }
  },
});

/** `lace ARGS` on a terminal: a pty from util-linux's script(1), whose output is the terminal's. */
async function laceOnTerminal(args: string[], env: Record<string, string>) {
  const quote = (a: string) => `'${a.replaceAll("'", `'\\''`)}'`;
  const command = [Deno.execPath(), "run", "-A", MAIN, ...args].map(quote).join(" ");
  // The test's own NO_COLOR, if any, stays out: only `env` says.
  const { NO_COLOR: _, ...inherited } = Deno.env.toObject();
  const out = await new Deno.Command("script", {
    args: ["-qec", command, "/dev/null"],
    env: { ...inherited, ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, output: new TextDecoder().decode(out.stdout) };
}

Deno.test({
  name: "lace agent's text log is coloured on a terminal only, and never with NO_COLOR",
  // The agent logs its datapath's start before the missing pods directory stops it.
  ignore: skipIf(needsRoot("bpffs pins")),
  async fn() {
    const pinPath = testPinPath();
    const args = [
      "agent",
      "--no-kube-api",
      "--pods-dir=/nonexistent/pods",
      `--pin-path=${pinPath}`,
      "--kubelet-cgroup=/sys/fs/cgroup/lace-cli-test-absent",
      "--metrics-addr=",
      "--log-format=text",
    ];
    const logged = /INF.*lace·datapath:.*Loaded BPF object/;
    try {
      const piped = await lace(args, { NO_COLOR: "" });
      assert.equal(piped.code, 1, piped.stderr);
      assert.match(piped.stderr, logged);
      assert.ok(!piped.stderr.includes("\x1b"), "no escape code when stderr is a pipe");
      const terminal = await laceOnTerminal(args, {});
      assert.equal(terminal.code, 1, terminal.output);
      assert.match(terminal.output, logged);
      assert.ok(terminal.output.includes("\x1b["), "colour on a terminal");
      const noColor = await laceOnTerminal(args, { NO_COLOR: "1" });
      assert.equal(noColor.code, 1, noColor.output);
      assert.match(noColor.output, logged);
      assert.ok(!noColor.output.includes("\x1b"), "no escape code with NO_COLOR");
    } finally {
      uninstall(pinPath);
    }
  },
});

/** Whether `shell` is installed (scripts/setup.sh --tests installs zsh and fish). */
function hasShell(shell: string): boolean {
  try {
    return new Deno.Command(shell, { args: ["-c", "exit 0"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** Runs `script` in `shell` with lace's completion script for it in $LACE_COMPLETION. */
async function inShell(shell: string, script: string) {
  const completion = await lace(["completion", shell]);
  assert.equal(completion.code, 0, completion.stderr);
  const dir = await Deno.makeTempDir({ prefix: "lace-completion-" });
  try {
    const file = `${dir}/lace.${shell}`;
    await Deno.writeTextFile(file, completion.stdout);
    const out = await new Deno.Command(shell, {
      args: shell === "zsh" ? ["-f", "-c", script] : ["-c", script],
      env: { LACE_COMPLETION: file },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("lace completion refuses a shell it does not know, naming the ones it does", async () => {
  const r = await lace(["completion", "tcsh"]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    'lace completion: takes one shell of bash, zsh, fish, got "tcsh": as in lace completion bash\n',
  );
});

// Each case: the words typed (the last one partial, bash splitting --flag=value at "=") and
// what bash offers.
const BASH_CASES: [string[], string][] = [
  [["lace", "do"], "doctor"],
  [["lace", "agent", "--log-l"], "--log-level"],
  [["lace", "agent", "--log-level", ""], "trace debug info warning error fatal"],
  [["lace", "agent", "--log-level", "=", "w"], "warning"],
  [["lace", "agent", "--address-sharing", "s"], "shared"],
  [["lace", "doctor", ""], "probes pod"],
  [["lace", "doctor", "--pin-path", "/sys/fs/bpf/lace", "p"], "probes pod"],
  [["lace", "doctor", "probes", ""], ""],
  [["lace", "targets", "-o", ""], "text json"],
  [["lace", "targets", "--no-j"], "--no-json"],
  [["lace", "netcheck", "--ip-family", "ipv"], "ipv4 ipv6"],
  [["lace", "completion", ""], "bash zsh fish"],
  [["lace", "kubectl", "-n", "lace-system", ""], "doctor targets"],
  [["lace", "help", "ne"], "netcheck"],
  [["lace", "agent", "--node-name", ""], ""],
];

Deno.test("lace completion bash registers _lace and completes commands, flags and their values", async () => {
  const calls = BASH_CASES.map(([words]) => {
    const quoted = words.map((w) => `'${w}'`).join(" ");
    return `COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _lace; echo "\${COMPREPLY[*]}"`;
  });
  const r = await inShell(
    "bash",
    ['source "$LACE_COMPLETION"', "complete -p lace", ...calls].join("\n"),
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  const [registered, ...offered] = r.stdout.split("\n").slice(0, -1);
  assert.equal(registered, "complete -F _lace lace");
  assert.deepEqual(
    offered.map((o, i) => [BASH_CASES[i][0].join(" "), o]),
    BASH_CASES.map(([words, want]) => [words.join(" "), want]),
  );
});

Deno.test("lace completion bash completes a directory flag with directories", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-completion-dir-" });
  try {
    await Deno.mkdir(`${dir}/pods`);
    await Deno.writeTextFile(`${dir}/pods.yaml`, "");
    const r = await inShell(
      "bash",
      `source "$LACE_COMPLETION"; COMP_WORDS=(lace agent --pods-dir '${dir}/po'); COMP_CWORD=3; ` +
        '_lace; echo "${COMPREPLY[*]}"',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${dir}/pods\n`, "the directory, not the file beside it");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "lace completion zsh parses and registers _lace for lace after compinit",
  ignore: !hasShell("zsh"),
  async fn() {
    const parse = await inShell("zsh", 'zsh -n "$LACE_COMPLETION"');
    assert.equal(parse.code, 0, parse.stderr);
    const r = await inShell(
      "zsh",
      'autoload -U compinit; compinit -u -D; source "$LACE_COMPLETION"; print -r -- $_comps[lace]',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "_lace\n");
  },
});

Deno.test({
  name: "lace completion fish parses and completes commands, subcommands and flag values",
  ignore: !hasShell("fish"),
  async fn() {
    const parse = await inShell("fish", 'fish -n "$LACE_COMPLETION"');
    assert.equal(parse.code, 0, parse.stderr);
    const names = (line: string) => line.split("\t")[0];
    const r = await inShell(
      "fish",
      'source "$LACE_COMPLETION"; complete -C "lace do"; echo ---; complete -C "lace doctor "; ' +
        'echo ---; complete -C "lace agent --log-level "; echo ---; complete -C "lace doctor probes "',
    );
    assert.equal(r.code, 0, r.stderr);
    const [commands, doctor, levels, afterSub] = r.stdout.split("---\n").map((part) =>
      part.split("\n").filter(Boolean).map(names)
    );
    assert.deepEqual(commands, ["doctor"]);
    assert.deepEqual(doctor, ["pod", "probes"]);
    assert.deepEqual(levels, ["debug", "error", "fatal", "info", "trace", "warning"]);
    assert.deepEqual(afterSub, [], "no second subcommand");
  },
});
