import { ParseError } from '../../platform/errors.js';

/** Entries of an INI file: section → key → raw string value. */
export type IniData = Record<string, Record<string, string>>;

/**
 * Parses the INI subset perun's files use: `[section]`, `key = value`, `;`/`#` comments on their
 * own line or after a value (preceded by whitespace), and a bare `key`: perun writes a setting
 * that is unset (`app_name`, `run_id`, `log_file`) without a value (`perun showconf`), which
 * means "not set here", so it is left out. A line that is none of these is an error naming the
 * file and line.
 */
/** A key written alone on its line (perun's unset setting). */
const VALUELESS_KEY = /^[\w.-]+$/;

export function parseIni(text: string, origin: string): IniData {
  const out: IniData = {};
  let section: string | undefined;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/\s[;#].*$/, '').trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) return;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      section = header[1]!.trim();
      out[section] ??= {};
      return;
    }
    const eq = line.indexOf('=');
    const colon = line.indexOf(':');
    const sep = eq >= 0 && (colon < 0 || eq < colon) ? eq : colon;
    if (sep < 0 && VALUELESS_KEY.test(line)) {
      if (section === undefined) throw new ParseError(`${origin}:${i + 1}: key outside any [section]`);
      return;
    }
    if (sep <= 0)
      throw new ParseError(`${origin}:${i + 1}: expected "key = value" or "[section]", got "${raw.trim()}"`);
    if (section === undefined) throw new ParseError(`${origin}:${i + 1}: key outside any [section]`);
    out[section]![line.slice(0, sep).trim()] = line.slice(sep + 1).trim();
  });
  return out;
}

/** Writes INI text that parseIni reads back to the same data. */
export function formatIni(data: IniData): string {
  return Object.entries(data)
    .map(
      ([section, keys]) =>
        `[${section}]\n${Object.entries(keys)
          .map(([k, v]) => `${k} = ${v}`)
          .join('\n')}\n`,
    )
    .join('\n');
}
