/**
 * The parts of the README and docs/ that the tests/docs_*_test.ts files hold to the code: code
 * spans, fenced blocks, tables, links and heading anchors, read with the few CommonMark rules the
 * pages use.
 * Pure: text in, parts out.
 */

/** A fenced code block: its info string (`sh`, `json`, …) and its text. */
export interface Fence {
  lang: string;
  text: string;
}

/** A page's prose (fences blanked, so their text is no span) and its fences. */
export function splitFences(markdown: string): { prose: string; fences: Fence[] } {
  const fences: Fence[] = [];
  const prose: string[] = [];
  let open: { marker: string; lang: string; lines: string[] } | undefined;
  for (const line of markdown.split("\n")) {
    const m = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
    if (open) {
      if (m && m[1][0] === open.marker[0] && m[1].length >= open.marker.length && !m[2]) {
        fences.push({ lang: open.lang, text: open.lines.join("\n") });
        open = undefined;
      } else open.lines.push(line);
      prose.push("");
    } else if (m) {
      open = { marker: m[1], lang: m[2], lines: [] };
      prose.push("");
    } else prose.push(line);
  }
  return { prose: prose.join("\n"), fences };
}

/** Every code span of `prose`, its text with whitespace collapsed, and the text before it. */
export function codeSpans(prose: string): { text: string; before: string }[] {
  const out: { text: string; before: string }[] = [];
  const pattern = /(?<!`)(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g;
  for (const m of prose.matchAll(pattern)) {
    let text = m[2].replace(/\s+/g, " ");
    if (text.startsWith(" ") && text.endsWith(" ") && text.trim() !== "") text = text.slice(1, -1);
    out.push({ text, before: prose.slice(Math.max(0, m.index! - 40), m.index!) });
  }
  return out;
}

/** The rows of every pipe table in `prose`: header cells first, each cell trimmed. */
export function tables(prose: string): string[][][] {
  const out: string[][][] = [];
  let rows: string[][] = [];
  const flush = () => {
    if (rows.length >= 2) out.push(rows.filter((_, i) => i !== 1));
    rows = [];
  };
  for (const line of prose.split("\n")) {
    if (/^\s*\|.*\|\s*$/.test(line)) rows.push(splitRow(line));
    else flush();
  }
  flush();
  return out;
}

/** The cells of a table row; `\|` and pipes inside code spans stay in their cell. */
function splitRow(line: string): string[] {
  const cells: string[] = [];
  let cell = "", ticks = 0;
  const body = line.trim().slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "`") ticks = ticks === 0 ? 1 : 0;
    if (c === "\\" && body[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (c === "|" && ticks === 0) {
      cells.push(cell.trim());
      cell = "";
    } else cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

/** Link targets of `prose` (`[text](target)`), without those that leave the repository. */
export function localLinks(prose: string): string[] {
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1])
    .filter((t) => !/^[a-z]+:/.test(t));
}

/** The anchors GitHub gives the headings of `markdown` (duplicates get -1, -2, …). */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of splitFences(markdown).prose.split("\n")) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/ /g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Words after which a shell line starts a command (`sudo lace …`, `kubectl exec POD -- lace …`). */
const COMMAND_STARTERS = new Set([
  "--",
  "exec",
  "sudo",
  "&&",
  "||",
  ";",
  "|",
  "time",
  "then",
  "do",
]);

/**
 * Each `lace CMD …` a shell text runs (also `./dist/lace CMD`, and after `sudo`, `exec`, `--`),
 * with the words that follow on its line, up to a comment or the next command.
 */
export function laceInvocations(shell: string): { command: string; words: string[] }[] {
  const out: { command: string; words: string[] }[] = [];
  for (const raw of shell.replace(/\\\n/g, " ").split("\n")) {
    const tokens = raw.replace(/(^|\s)#.*$/, "").trim().split(/\s+/).filter(Boolean);
    tokens.forEach((token, i) => {
      if (token !== "lace" && !token.endsWith("/lace")) return;
      if (i > 0 && !COMMAND_STARTERS.has(tokens[i - 1])) return;
      const rest = tokens.slice(i + 1);
      const end = rest.findIndex((t) => COMMAND_STARTERS.has(t) && t !== "--");
      const words = end === -1 ? rest : rest.slice(0, end);
      if (words.length > 0) out.push({ command: words[0], words: words.slice(1) });
    });
  }
  return out;
}
