/**
 * The one rule for a Lace network's name, wherever a name enters: a pod's annotation, the CNI
 * conf's `network`, the agent's `node-networks.json`, the `--cni-chain-files` flag and the CNI
 * socket. Every one of those names is compared with the others and printed in logs, Events and
 * `lace targets`, so they must all take the same form.
 */

/** The longest network name, in characters: a Kubernetes object name's limit (DNS subdomain). */
export const MAX_NETWORK_NAME = 253;

/**
 * A network name is 1..253 characters, none of them a control, format or private-use
 * character, a space or separator, or unassigned: where such a character is printed it either
 * hides what the name says or makes two names look alike.
 */
const NETWORK_NAME = new RegExp(`^[^\\p{C}\\p{Z}]{1,${MAX_NETWORK_NAME}}$`, "u");

/**
 * Why `name` is not a network name, as the end of a sentence naming where it came from
 * (`must be 1..253 printable characters without spaces: "blue net" (8 characters)`, at most 80
 * of its characters quoted), or null when it is one. Callers prefix the file or field and say
 * what to do.
 */
export function networkNameProblem(name: unknown): string | null {
  if (typeof name === "string" && NETWORK_NAME.test(name)) return null;
  if (typeof name !== "string") {
    return `must be a string of 1..${MAX_NETWORK_NAME} printable characters without spaces: ${
      JSON.stringify(name) ?? String(name)
    }`;
  }
  return `must be 1..${MAX_NETWORK_NAME} printable characters without spaces: ${
    quotedAtMost80(name)
  } (${[...name].length} characters)`;
}

/**
 * What to do about a bad name in a CNI conf or `--cni-chain-files`, after the problem. The CNI
 * plugin and the flag parser do not know which annotation key the agent was given, so this
 * names the flag that sets it and its default rather than a key that may not be the one in use.
 */
export const GIVE_ANNOTATED_NAME =
  "give the name Lace's network plugin writes in its pods' network annotation (the agent's --network-annotation, lace.io/network by default)";

/**
 * `text` quoted as JSON, cut to its first 80 characters (then `…`): for an annotation's value
 * in a message, which a pod author may make as long as the API server lets annotations be.
 */
export function quotedAtMost80(text: string): string {
  const chars = [...text];
  return JSON.stringify(chars.length > 80 ? `${chars.slice(0, 80).join("")}…` : text);
}

/**
 * `network "blue"`: a network's name in a message, quoted as JSON. The rule lets a name hold
 * `"`, `)` or `,`, so a name written bare or between plain quotes could close them and make
 * the message name another network or say something else (`network "a" (id 1), and network
 * "b"`); JSON quoting escapes the quote, and the name is one string however it reads.
 */
export function networkLabel(name: string): string {
  return `network ${JSON.stringify(name)}`;
}
