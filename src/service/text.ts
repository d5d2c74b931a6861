/** True when `text` has a C0 control character or DEL (newlines, NUL, escapes). */
export function hasControlChars(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * A caller-supplied name as error messages echo it: callers may send megabytes or control
 * characters; show a bounded prefix with controls replaced.
 */
export function shown(name: string): string {
  const head = name.length > 80 ? name.slice(0, 80) : name;
  let clean = '';
  for (const ch of head) clean += hasControlChars(ch) ? '?' : ch;
  return name.length > 80 ? `${clean}…` : clean;
}
