/**
 * The logging flags every long-running command shares (`lace agent`, `lace netcheck`): one
 * definition, so the same flag and variable set the same thing wherever they are given.
 */
import { LOG_FORMATS, LOG_LEVELS, type LogSettings } from "../log/setup.ts";
import { type FlagSpec, oneOf } from "./parser.ts";

const LOG_FLAGS: FlagSpec<LogSettings>[] = [
  {
    name: "log-level",
    key: "logLevel",
    value: oneOf(LOG_LEVELS),
    env: ["LACE_LOG_LEVEL"],
    metavar: "LEVEL",
    help: "Minimum level logged",
  },
  {
    name: "log-format",
    key: "logFormat",
    value: oneOf(LOG_FORMATS),
    env: ["LACE_LOG_FORMAT"],
    metavar: "FORMAT",
    help: "auto: text on a terminal, JSON lines otherwise; text is coloured only on a terminal " +
      "and without NO_COLOR",
  },
];

/**
 * The flags for a command whose options include LogSettings. The cast only widens the options
 * type: each flag writes its own key, whose type is LogSettings' in every such command.
 */
export function logFlags<O extends LogSettings>(): FlagSpec<O>[] {
  return LOG_FLAGS as unknown as FlagSpec<O>[];
}
