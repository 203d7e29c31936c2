import assert from "node:assert/strict";
import { type BuildInfo, buildInfo, gitBuildInfo } from "./version.ts";

const FROM_GIT: BuildInfo = { commit: "abc", treeState: "clean", commitDate: "", buildDate: "" };

Deno.test("buildInfo() reads the build's embedded facts, else asks git", () => {
  const embedded = {
    commit: "0123456789abcdef0123456789abcdef01234567",
    treeState: "dirty",
    commitDate: "2026-12-01T10:00:00+00:00",
    buildDate: "2026-12-06T05:00:00Z",
  };
  assert.deepEqual(buildInfo(() => JSON.stringify(embedded), () => FROM_GIT), embedded);
  const missing = () => {
    throw new Deno.errors.NotFound("no build_info.json");
  };
  assert.deepEqual(buildInfo(missing, () => FROM_GIT), FROM_GIT);
});

Deno.test("buildInfo() shows an embedded field of the wrong kind as unknown", () => {
  const odd = JSON.stringify({ commit: 7, treeState: "maybe", buildDate: ["x"] });
  assert.deepEqual(buildInfo(() => odd, () => FROM_GIT), {
    commit: "unknown",
    treeState: "",
    commitDate: "",
    buildDate: "",
  });
});

Deno.test("gitBuildInfo() says the commit, whether the tree has changes and the commit's date", () => {
  const answers: Record<string, string | null> = {
    "rev-parse HEAD": "0123456789abcdef0123456789abcdef01234567",
    "status --porcelain --untracked-files=no": " M lib/version.ts",
    "show -s --format=%cI HEAD": "2026-12-01T10:00:00+00:00",
  };
  assert.deepEqual(gitBuildInfo((args) => answers[args.join(" ")]), {
    commit: "0123456789abcdef0123456789abcdef01234567",
    treeState: "dirty",
    commitDate: "2026-12-01T10:00:00+00:00",
    buildDate: "",
  });
  answers["status --porcelain --untracked-files=no"] = "";
  assert.equal(gitBuildInfo((args) => answers[args.join(" ")]).treeState, "clean");
});

Deno.test("gitBuildInfo() says unknown where git does not answer (no git, not a checkout)", () => {
  assert.deepEqual(gitBuildInfo(() => null), {
    commit: "unknown",
    treeState: "",
    commitDate: "",
    buildDate: "",
  });
});
