/**
 * The pages the docs tests hold to the code: the README, every page of docs/ but the generated
 * docs/mutation.md, and the chart's README, each read once with its prose and fences apart.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Fence, splitFences } from "./docs_markup.ts";

/** The repository's root, with a trailing slash. */
export const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** What .gitignore names (build outputs): a page may name them before they are built. */
export const BUILD_OUTPUTS = Deno.readTextFileSync(join(REPO, ".gitignore")).split("\n")
  .filter((l) => l.startsWith("/") && !l.includes("*")).map((l) => l.slice(1));

/** A page: its path from the repository, text, prose (fences blanked) and fences. */
export interface Page {
  path: string;
  text: string;
  prose: string;
  fences: Fence[];
}

/** The chart's README: its values table is the one list of the chart's keys. */
export const CHART_README = "deploy/helm/lace/README.md";

function readPages(): Page[] {
  const paths = ["README.md", CHART_README];
  for (const e of Deno.readDirSync(join(REPO, "docs"))) {
    if (e.isFile && e.name.endsWith(".md") && e.name !== "mutation.md") {
      paths.push(`docs/${e.name}`);
    }
  }
  return paths.sort().map((path) => {
    const text = Deno.readTextFileSync(join(REPO, path));
    return { path, text, ...splitFences(text) };
  });
}

/** Every page, sorted by path. */
export const PAGES = readPages();
