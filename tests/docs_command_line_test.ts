/**
 * The command line the README and docs/ name: each flag, environment variable, `lace` command
 * (with its subcommand and flags), `scripts/dev` command and `deno task` must exist, so that a
 * rename in the code fails here instead of leaving a page that lies (docs/testing.md, "Docs that
 * cannot drift", says what markup counts as naming one).
 */
import assert from "node:assert/strict";
import { flagProblem } from "./helpers/docs_flags.ts";
import { pagesNameNothingMissing } from "./helpers/docs_page_problems.ts";

pagesNameNothingMissing("flags");
pagesNameNothingMissing("envs");
pagesNameNothingMissing("commands");

Deno.test("flagProblem() names a flag no lace command has, and passes one it has, with its value", () => {
  const flags = new Set(["--pod-cidrs"]);
  assert.equal(flagProblem("--pod-cidrs=10.0.0.0/8", flags), undefined);
  assert.equal(flagProblem("--pod-cidrs CIDRS", flags), undefined);
  assert.equal(flagProblem("--set", flags), undefined);
  assert.match(flagProblem("--pod-cidr", flags)!, /--pod-cidr is no flag/);
});
