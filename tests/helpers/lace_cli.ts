/**
 * `lace` run from source as an operator runs it, for the tests of the command line: the process
 * and its exit code, stdout and stderr, without colour, and the commands `lace --help` lists.
 */
import { fileURLToPath } from "node:url";

/** main.ts, which `lace` runs. */
export const MAIN = fileURLToPath(new URL("../../main.ts", import.meta.url));

/** Runs `command ARGS` with `env` added, stdin closed; returns its code and its output as text. */
export async function runCaptured(command: string, args: string[], env: Record<string, string>) {
  const out = await new Deno.Command(command, {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Runs `lace ARGS` with NO_COLOR and `env`, stdin closed; returns its code and output. */
export function lace(args: string[], env: Record<string, string> = {}) {
  return runCaptured(Deno.execPath(), ["run", "-A", MAIN, ...args], { NO_COLOR: "1", ...env });
}

/**
 * `lace agent` arguments that start the datapath under `pinPath` (pins under bpffs: root) and
 * then fail on a pods directory that does not exist, logging as text.
 */
export function agentFailingOnPodsDir(pinPath: string): string[] {
  return [
    "agent",
    "--no-kube-api",
    "--pods-dir=/nonexistent/pods",
    `--pin-path=${pinPath}`,
    "--kubelet-cgroup=/sys/fs/cgroup/lace-cli-test-absent",
    "--metrics-addr=",
    "--log-format=text",
  ];
}

/** The commands `lace --help` lists. */
export const COMMANDS = [
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
