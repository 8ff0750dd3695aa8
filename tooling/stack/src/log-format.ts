import type { SupervisorOutput } from "./supervisor.ts";

const COLORS = [36, 33, 35, 32, 34, 91, 96, 93, 95, 92];
const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
const OMIT = new Set(["level", "time", "msg", "service", "pid", "hostname"]);

/**
 * Makes a pino JSON line readable: `LEVEL message {other fields}`. Anything that is not
 * a JSON object (a crash trace, a config error) is shown as it came.
 */
export function formatLogLine(text: string): string {
  if (!text.startsWith("{")) return text;
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return text;
  }
  const level = LEVELS[record.level as number] ?? String(record.level ?? "");
  const rest = Object.fromEntries(Object.entries(record).filter(([k]) => !OMIT.has(k)));
  const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : "";
  return `${level.padEnd(5)} ${String(record.msg ?? "")}${extra}`;
}

/**
 * Prints each service's lines prefixed with its name (`[edge] ...`), one colour per
 * service on a terminal, and the runner's own notices as `[stack] ...` (its errors as
 * `[stack] ERROR ...`).
 */
export function consoleOutput(
  names: readonly string[],
  color = process.stdout.isTTY && !process.env.NO_COLOR,
) {
  const width = Math.max(...names.map((n) => n.length), "stack".length);
  const prefix = (name: string, code: number) => {
    const tag = `[${name}]`.padEnd(width + 2);
    return color ? `\x1b[${code}m${tag}\x1b[0m` : tag;
  };
  const codeOf = (name: string) => COLORS[Math.max(names.indexOf(name), 0) % COLORS.length]!;
  const output: SupervisorOutput & { say(name: string, text: string): void } = {
    line: (service, text) =>
      process.stdout.write(`${prefix(service, codeOf(service))} ${formatLogLine(text)}\n`),
    notice: (text) => process.stdout.write(`${prefix("stack", 1)} ${text}\n`),
    error: (text) =>
      process.stdout.write(`${prefix("stack", 1)} ${color ? "\x1b[31mERROR\x1b[0m" : "ERROR"} ${text}\n`),
    say: (name, text) => process.stdout.write(`${prefix(name, 1)} ${text}\n`),
  };
  return output;
}
