import assert from "node:assert/strict";
import { boolean, type CommandSpec, oneOf, text } from "../flags/parser.ts";
import { outputFlags } from "../flags/output.ts";
import { bashCompletion, completionModel, fishCompletion, zshCompletion } from "./completion.ts";

interface ToyOptions {
  output: "text" | "json";
  level: "info" | "debug";
  dir: string;
  file: string;
  name: string;
  on: boolean;
  secret: string;
}

const toy: CommandSpec<ToyOptions> = {
  name: "toy",
  summary: "Play with it. More words here.",
  usage: "lace toy [run | show NAME]",
  subcommands: [{ name: "run", summary: "Run it" }, { name: "show", summary: "Show one" }],
  flags: [
    ...outputFlags<ToyOptions>(),
    { name: "level", key: "level", value: oneOf(["info", "debug"] as const), help: "Level" },
    { name: "dir", key: "dir", value: text, metavar: "DIR", help: "A directory: the one" },
    { name: "file", key: "file", value: text, metavar: "FILE", help: "A file (default none)" },
    { name: "name", key: "name", value: text, metavar: "NAME", help: "Someone's name" },
    { name: "on", key: "on", value: boolean, help: "Switch" },
    { name: "secret", key: "secret", value: text, hidden: true, help: "Hidden" },
  ],
  defaults: () => ({
    output: "text",
    level: "info",
    dir: "",
    file: "",
    name: "",
    on: false,
    secret: "",
  }),
};

Deno.test("completionModel() reads flags, their values and subcommands from the flag table", () => {
  const [model, help] = completionModel([toy]);
  assert.equal(model.summary, "Play with it");
  assert.deepEqual(model.subcommands.map((s) => s.name), ["run", "show"]);
  const byName = Object.fromEntries(model.flags.map((f) => [f.long, f]));
  assert.deepEqual(Object.keys(byName), [
    "output",
    "json",
    "level",
    "dir",
    "file",
    "name",
    "on",
    "help",
  ]);
  assert.deepEqual(byName.output.value, { kind: "words", words: ["text", "json"] });
  assert.equal(byName.output.short, "o");
  assert.equal(byName.json.value, undefined, "a switch takes no value");
  assert.deepEqual(byName.level.value, { kind: "words", words: ["info", "debug"] });
  assert.deepEqual(byName.dir.value, { kind: "dirs" });
  assert.deepEqual(byName.file.value, { kind: "files" });
  assert.deepEqual(byName.name.value, { kind: "none" });
  assert.equal(byName.dir.help, "A directory");
  assert.equal(byName.file.help, "A file");
  assert.equal(byName.help.short, "h");
  assert.equal(help.name, "help");
  assert.deepEqual(help.subcommands.map((s) => s.name), ["toy"]);
});

Deno.test("bashCompletion() completes each flag's values, its --no- form and the subcommands", () => {
  const script = bashCompletion([toy]);
  assert.match(script, /^ {4}toy\) echo '--output -o --json --no-json --level --dir /m);
  assert.match(script, / --name --on --no-on --help -h' ;;$/m);
  assert.doesNotMatch(script, /--secret|--no-help/);
  assert.match(script, /^ {4}'toy --output'\|'toy -o'\) COMPREPLY=\(\$\(compgen -W 'text json'/m);
  assert.match(script, /^ {4}'toy --dir'\) .*compgen -d /m);
  assert.match(script, /^ {4}'toy --file'\) .*compgen -f /m);
  assert.match(script, /^ {4}'toy --name'\) COMPREPLY=\(\) ;;$/m);
  assert.match(script, /^ {4}toy\) echo 'run show' ;;$/m);
  assert.match(script, /^complete -F _lace lace$/m);
});

Deno.test("zshCompletion() quotes a description's apostrophe and escapes its brackets", () => {
  const script = zshCompletion([{
    ...toy,
    flags: [{ name: "x", value: text, help: "Pod's [main] one" }],
  }]);
  assert.match(script, /'--x=\[Pod'\\''s \\\[main\\\] one\]:TEXT: '/);
  assert.match(script, /'1:command:\(run show\)'/);
  assert.match(script, /^ {2}compdef _lace lace$/m);
});

Deno.test("fishCompletion() offers subcommands until one is given, and each flag's values", () => {
  const script = fishCompletion([toy]);
  assert.match(
    script,
    /^complete -c lace -n '__lace_command toy; and not __fish_seen_subcommand_from run show' -a run -d 'Run it'$/m,
  );
  assert.match(
    script,
    /^complete -c lace -n '__lace_command toy' -s o -l output -x -a 'text json'/m,
  );
  assert.match(script, /-l name -x -d 'Someone\\'s name'$/m);
  assert.match(script, /-l no-on -d 'Off: Switch'$/m);
});
