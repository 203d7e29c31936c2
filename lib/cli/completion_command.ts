/**
 * `lace completion bash|zsh|fish`: prints the shell's completion script, written from every
 * command's flag table (completion.ts), as cobra's `completion` command does.
 */
import { type CommandSpec, helpText, parseFlags, UsageError } from "../flags/parser.ts";
import { type CompletionCommand, completionScript, type Shell, SHELLS } from "./completion.ts";

/** The command's flags and subcommands, for its help and for completion itself. */
export const completionCommand: CommandSpec<Record<never, never>> = {
  name: "completion",
  summary: [
    "Print the completion script of a shell: commands, subcommands, flags and the values they take.",
    "  bash: source <(lace completion bash), or write it to /etc/bash_completion.d/lace",
    "  zsh:  source <(lace completion zsh) after compinit, or write it as _lace in a $fpath directory",
    "  fish: lace completion fish | source, or write it to ~/.config/fish/completions/lace.fish",
  ].join("\n"),
  usage: "lace completion bash|zsh|fish",
  flags: [],
  positionals: true,
  subcommands: [
    { name: "bash", summary: "The bash script (bash 4 or later)" },
    { name: "zsh", summary: "The zsh script" },
    { name: "fish", summary: "The fish script" },
  ],
  defaults: () => ({}),
};

/** Runs `lace completion SHELL` over `commands` (every command but this one's own help). */
export async function runCompletionCommand(
  args: string[],
  commands: () => Promise<CompletionCommand[]>,
): Promise<number> {
  const { positionals, help } = parseFlags(completionCommand, args, {});
  if (help) {
    console.log(helpText(completionCommand));
    return 0;
  }
  const [shell, ...extra] = positionals;
  if (!SHELLS.includes(shell as Shell) || extra.length > 0) {
    const given = shell === undefined ? "no shell" : `"${[shell, ...extra].join(" ")}"`;
    throw new UsageError(
      `takes one shell of ${SHELLS.join(", ")}, got ${given}: as in lace completion bash`,
    );
  }
  const script = completionScript(shell as Shell, await commands());
  await Deno.stdout.write(new TextEncoder().encode(script));
  return 0;
}
