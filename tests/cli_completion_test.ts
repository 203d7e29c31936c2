/**
 * `lace completion bash|zsh|fish`: each script parses in its shell and completes commands,
 * subcommands, flags and their values (scripts/setup.sh --tests installs zsh and fish).
 */
import assert from "node:assert/strict";
import { lace, runCaptured } from "./helpers/lace_cli.ts";

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
    return await runCaptured(shell, shell === "zsh" ? ["-f", "-c", script] : ["-c", script], {
      LACE_COMPLETION: file,
    });
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
