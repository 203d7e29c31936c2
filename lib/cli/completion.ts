/**
 * Shell completion scripts for bash, zsh and fish, written from the commands' own flag tables:
 * the commands, their subcommands, their flags (with `--no-` for a switch and the one-letter
 * forms) and the words a flag takes (a oneOf's words, files for FILE and PATH, directories for
 * DIR). The scripts are static: a TAB never starts `lace`.
 */

/** What completion reads of a command: its CommandSpec (lib/flags/parser.ts) fits. */
export interface CompletionCommand {
  name: string;
  summary: string;
  flags: readonly {
    name: string;
    short?: string;
    help: string;
    metavar?: string;
    hidden?: boolean;
    value: { metavar: string; boolean?: true; choices?: readonly string[] };
  }[];
  subcommands?: readonly { name: string; summary: string }[];
}

/** What a flag's value is completed with. */
type ValueKind =
  | { kind: "words"; words: readonly string[] }
  | { kind: "files" }
  | { kind: "dirs" }
  | { kind: "none" };

interface FlagModel {
  long: string;
  short?: string;
  help: string;
  metavar: string;
  /** A switch takes no value (and has a `--no-` form); otherwise how its value is completed. */
  value?: ValueKind;
}

interface CommandModel {
  name: string;
  summary: string;
  flags: FlagModel[];
  subcommands: { name: string; summary: string }[];
}

/** The first clause of a help text, short enough for a completion menu. */
function brief(text: string): string {
  const first = text.split("\n")[0].split(/(?<=[a-z)])[.;:] |, or | \(/)[0].trim();
  return first.length > 70 ? `${first.slice(0, 69).trimEnd()}…` : first;
}

function valueKind(metavar: string, choices: readonly string[] | undefined): ValueKind {
  if (choices) return { kind: "words", words: choices };
  if (/\bDIR\b/.test(metavar)) return { kind: "dirs" };
  if (/\b(FILE|PATH)\b/.test(metavar)) return { kind: "files" };
  return { kind: "none" };
}

/** The commands as the scripts complete them; `help` takes a command's name. */
export function completionModel(commands: readonly CompletionCommand[]): CommandModel[] {
  const models = commands.map((c): CommandModel => ({
    name: c.name,
    summary: brief(c.summary),
    subcommands: (c.subcommands ?? []).map((s) => ({ name: s.name, summary: brief(s.summary) })),
    flags: [
      ...c.flags.filter((f) => !f.hidden).map((f): FlagModel => {
        const metavar = f.metavar ?? f.value.metavar;
        return {
          long: f.name,
          short: f.short,
          help: brief(f.help),
          metavar,
          value: f.value.boolean ? undefined : valueKind(metavar, f.value.choices),
        };
      }),
      { long: "help", short: "h", help: "Show this help", metavar: "" },
    ],
  }));
  models.push({
    name: "help",
    summary: "Show a command's help",
    subcommands: models.map((m) => ({ name: m.name, summary: m.summary })),
    flags: [],
  });
  return models;
}

/** `text` inside single quotes, for bash and zsh. */
function shQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** Every spelling of a flag on the command line (`--x`, `--no-x`, `-x`). */
function spellings(f: FlagModel): string[] {
  return [
    `--${f.long}`,
    ...(f.value ? [] : [`--no-${f.long}`]),
    ...(f.short ? [`-${f.short}`] : []),
  ]
    .filter((s) => s !== "--no-help");
}

/** The bash script: `source <(lace completion bash)`. */
export function bashCompletion(commands: readonly CompletionCommand[]): string {
  const models = completionModel(commands);
  const flagCases = models.map((m) =>
    `    ${m.name}) echo ${shQuote(m.flags.flatMap(spellings).join(" "))} ;;`
  );
  const valueCases = models.flatMap((m) =>
    m.flags.filter((f) => f.value).map((f) => {
      const names = [`--${f.long}`, ...(f.short ? [`-${f.short}`] : [])]
        .map((n) => `${shQuote(`${m.name} ${n}`)}`).join("|");
      const v = f.value!;
      const reply = v.kind === "words"
        ? `COMPREPLY=($(compgen -W ${shQuote(v.words.join(" "))} -- "$3"))`
        : v.kind === "dirs"
        ? `compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$3"))`
        : v.kind === "files"
        ? `compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$3"))`
        : "COMPREPLY=()";
      return `    ${names}) ${reply} ;;`;
    })
  );
  const subCases = models.filter((m) => m.subcommands.length).map((m) =>
    `    ${m.name}) echo ${shQuote(m.subcommands.map((s) => s.name).join(" "))} ;;`
  );
  const top = [...models.map((m) => m.name), "-h", "--help", "--version"].join(" ");
  return `# bash completion for lace, written by \`lace completion bash\` from its flag tables.
# Load it with: source <(lace completion bash)

# The flags of command $1.
_lace_flags() {
  case "$1" in
${flagCases.join("\n")}
  esac
}

# Sets COMPREPLY to the values of flag $2 of command $1 that start with $3; fails when $2 takes
# no value (and succeeds when it takes one, whether or not any value matches).
_lace_value() {
  case "$1 $2" in
${valueCases.join("\n")}
    *) return 1 ;;
  esac
  return 0
}

# The subcommands of command $1.
_lace_subcommands() {
  case "$1" in
${subCases.join("\n")}
  esac
}

_lace() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]}
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W ${shQuote(top)} -- "$cur"))
    return 0
  fi
  local cmd=\${COMP_WORDS[1]}
  # bash splits --flag=value at "=" (COMP_WORDBREAKS): the flag is the word before the "=".
  if [[ $cur == "=" ]]; then
    _lace_value "$cmd" "$prev" "" && return 0
  elif [[ $prev == "=" ]] && ((COMP_CWORD >= 3)); then
    _lace_value "$cmd" "\${COMP_WORDS[COMP_CWORD-2]}" "$cur" && return 0
  elif [[ $cur == --*=* ]]; then
    if _lace_value "$cmd" "\${cur%%=*}" "\${cur#*=}"; then
      COMPREPLY=("\${COMPREPLY[@]/#/\${cur%%=*}=}")
      return 0
    fi
  elif _lace_value "$cmd" "$prev" "$cur"; then
    return 0
  fi
  COMPREPLY=()
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_lace_flags "$cmd")" -- "$cur"))
    return 0
  fi
  # A subcommand comes first: count the words so far that are neither flags nor their values.
  local i=2 n=0 w
  while ((i < COMP_CWORD)); do
    w=\${COMP_WORDS[i]}
    if [[ $w == -* ]]; then
      if [[ \${COMP_WORDS[i+1]} == "=" ]]; then
        ((i += 3))
        continue
      fi
      if _lace_value "$cmd" "$w" ""; then
        ((i += 2))
        continue
      fi
    else
      ((n++))
    fi
    ((i++))
  done
  COMPREPLY=()
  if ((n == 0)); then
    COMPREPLY=($(compgen -W "$(_lace_subcommands "$cmd")" -- "$cur"))
  fi
  return 0
}

complete -F _lace lace
`;
}

/** `text` inside a zsh _arguments description: its brackets and colons escaped. */
function zshText(text: string): string {
  return text.replace(/[\\[\]:]/g, (c) => `\\${c}`);
}

function zshAction(v: ValueKind): string {
  switch (v.kind) {
    case "words":
      return `(${v.words.join(" ")})`;
    case "dirs":
      return "_files -/";
    case "files":
      return "_files";
    case "none":
      return " ";
  }
}

/** One _arguments spec of a flag (two for a switch: `--x` and `--no-x`). */
function zshFlagSpecs(f: FlagModel): string[] {
  const help = `[${zshText(f.help)}]`;
  if (!f.value) {
    const names = f.short ? `'(-${f.short} --${f.long})'{-${f.short},--${f.long}}` : `--${f.long}`;
    const negative = f.long === "help" ? [] : [shQuote(`--no-${f.long}[Off: ${zshText(f.help)}]`)];
    return [f.short ? `${names}${shQuote(help)}` : shQuote(`${names}${help}`), ...negative];
  }
  const arg = `:${zshText(f.metavar || f.long)}:${zshAction(f.value)}`;
  if (f.short) {
    return [
      `'(-${f.short} --${f.long})'{-${f.short}+,--${f.long}=}${shQuote(`${help}${arg}`)}`,
    ];
  }
  return [shQuote(`--${f.long}=${help}${arg}`)];
}

/** The zsh script: `source <(lace completion zsh)` after compinit, or as _lace on $fpath. */
export function zshCompletion(commands: readonly CompletionCommand[]): string {
  const models = completionModel(commands);
  const describe = models.map((m) => `    ${shQuote(`${m.name}:${m.summary}`)}`);
  const cases = models.map((m) => {
    const specs = m.flags.flatMap(zshFlagSpecs);
    if (m.subcommands.length) {
      specs.push(
        shQuote(`1:command:(${m.subcommands.map((s) => s.name).join(" ")})`),
        "'*:argument: '",
      );
    }
    return `    ${m.name})\n      _arguments -s \\\n        ${
      specs.join(" \\\n        ")
    }\n      ;;`;
  });
  return `#compdef lace
# zsh completion for lace, written by \`lace completion zsh\` from its flag tables.
# Load it with: source <(lace completion zsh)   (after compinit)

_lace() {
  local -a commands
  commands=(
${describe.join("\n")}
  )
  if (( CURRENT == 2 )); then
    _describe -t commands 'lace command' commands
    return
  fi
  local command=$words[2]
  shift words
  (( CURRENT-- ))
  case $command in
${cases.join("\n")}
  esac
}

if [ "$funcstack[1]" = "_lace" ]; then
  _lace "$@"
else
  compdef _lace lace
fi
`;
}

/** `text` inside fish's single quotes. */
function fishQuote(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** The fish script: `lace completion fish | source`. */
export function fishCompletion(commands: readonly CompletionCommand[]): string {
  const models = completionModel(commands);
  const lines = [
    "# fish completion for lace, written by `lace completion fish` from its flag tables.",
    "# Load it with: lace completion fish | source",
    "",
    "complete -c lace -e",
    "complete -c lace -f",
    "",
    "# Whether the command line's command (its second word) is one of $argv.",
    "function __lace_command",
    "    set -l words (commandline -opc)",
    "    test (count $words) -ge 2; and contains -- $words[2] $argv",
    "end",
    "",
    "# Whether the command line has no command yet.",
    "function __lace_no_command",
    "    test (count (commandline -opc)) -eq 1",
    "end",
    "",
    "complete -c lace -n __lace_no_command -s h -l help -d 'Show this help'",
    "complete -c lace -n __lace_no_command -l version -d 'Print the version'",
  ];
  for (const m of models) {
    lines.push(
      `complete -c lace -n __lace_no_command -a ${m.name} -d ${fishQuote(m.summary)}`,
    );
  }
  for (const m of models) {
    const when = `__lace_command ${m.name}`;
    if (m.subcommands.length) {
      const names = m.subcommands.map((s) => s.name).join(" ");
      for (const s of m.subcommands) {
        lines.push(
          `complete -c lace -n ${
            fishQuote(`${when}; and not __fish_seen_subcommand_from ${names}`)
          } -a ${s.name} -d ${fishQuote(s.summary)}`,
        );
      }
    }
    for (const f of m.flags) {
      const names = `${f.short ? `-s ${f.short} ` : ""}-l ${f.long}`;
      const v = f.value;
      const takes = !v
        ? ""
        : v.kind === "words"
        ? ` -x -a ${fishQuote(v.words.join(" "))}`
        : v.kind === "dirs"
        ? " -x -a '(__fish_complete_directories)'"
        : v.kind === "files"
        ? " -r -F"
        : " -x";
      lines.push(
        `complete -c lace -n ${fishQuote(when)} ${names}${takes} -d ${fishQuote(f.help)}`,
      );
      if (!v && f.long !== "help") {
        lines.push(
          `complete -c lace -n ${fishQuote(when)} -l no-${f.long} -d ${
            fishQuote(`Off: ${f.help}`)
          }`,
        );
      }
    }
  }
  return lines.join("\n") + "\n";
}

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = typeof SHELLS[number];

/** The completion script of `shell`. */
export function completionScript(shell: Shell, commands: readonly CompletionCommand[]): string {
  return { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion }[shell](commands);
}
